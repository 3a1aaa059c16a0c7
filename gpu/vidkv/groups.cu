/*
 * groups.cu -- the VIDKV key groups on CUDA, bit-exact to ref/fast/vidkv.c:
 * the 2-bit abnormal channels [VIDKV-K-03] (KIVI groups, [KIVI-Q-01..06]), the
 * 1-bit normal channels without the FFT [VIDKV-K-08] (MINMAX: KIVI bits 1;
 * SIGNMEAN: code x >= 0, scale RN32(S/G) stored as [VIDKV-K-06]), the key
 * dequantizer's input checks [VIDKV-D-02..03] and its element kernel
 * [VIDKV-K-11] (the FFT channels are gpu/vidkv/fft/fft.cu's).
 *
 * Kernels:
 *   vk_keygroup_kernel    one thread a (head, block, channel) group, abnormal
 *                         (KIVI bits 2) or normal (MINMAX: KIVI bits 1; SIGNMEAN):
 *                         consecutive threads consecutive channels; the values
 *                         read for their value only (the split raised SUBNORMAL
 *                         for every key), G = 32 codes stored as one 8- or
 *                         4-byte word
 *   vk_att_kernel         the handed-in ranges' ends all attained [VIDKV-DEV-07]
 *   vk_mask_check_kernel  set bits of every mask row [VIDKV-D-02]: one warp a row
 *                         (ballots), the channel lists and positions
 *   vk_meta_check4_kernel the first bad stored metadata value of each of the four
 *                         arrays, one launch (grid.y the array)
 *   vk_keys_deq_group_kernel  one thread a group, gated on the checks' words on the
 *                         device (no host round trip between checking and writing;
 *                         MINMAX, SIGNMEAN, and keys without normal channels); G = 32
 *                         codes as one 8- or 4-byte load
 *
 * KVQ_VIDKV_PLANT 5 (the key dequantizer writes whatever the checks found), 7
 * (the G = 32 word store puts the last code in the slot before it), 9 (handed-in
 * ranges whose ends no key attains pass) and 10 (keys outside their handed-in
 * range pass) are planted bugs of a test build only (gpu/vidkv/rules.mk).
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"

#define GROUP_BS 128u

/* The even bits of x (bit 2i -> bit i, i < 16). */
__device__ __forceinline__ uint32_t vk_even_bits(uint32_t x)
{
    x &= 0x55555555u;
    x = (x | (x >> 1)) & 0x33333333u;
    x = (x | (x >> 2)) & 0x0F0F0F0Fu;
    x = (x | (x >> 4)) & 0x00FF00FFu;
    return (x | (x >> 8)) & 0x0000FFFFu;
}

/* One thread a (head, block, channel) group: consecutive threads consecutive
 * channels, so every token's loads are one coalesced row segment for the warp,
 * whichever set each channel is in.  pos says the set and the index in it:
 * abnormal -> a KIVI group of bits 2 [VIDKV-K-03]; normal -> MINMAX (KIVI bits 1)
 * or SIGNMEAN [VIDKV-K-08], nothing under FFT (fft.cu). */
template <uint32_t GT, bool RANGED> /* G at compile time (32, 64: values in registers) or 0;
                                       RANGED: the ranges handed in (rmn, rmx, att) */
__global__ void __launch_bounds__(GROUP_BS)
vk_keygroup_kernel(kvq_vidkv_keys o, vk_state *st, const float *k, const uint32_t *pos,
                   kvq_vidkv_params p, uint32_t na, uint32_t nn, uint32_t mode, bool daz, bool away,
                   bool nanpol, bool wordst, const float *rmn, const float *rmx, uint32_t *att)
{
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t G = GT ? GT : p.group, nb = p.tokens / G, d = p.dim;
    const uint64_t ng = (uint64_t)p.heads * nb * d;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        uint64_t hb; /* h*nb + b */
        uint32_t c;
        vk_divmod(gid, ng, d, hb, c);
        float r[GT ? GT : 1u];
        const uint32_t h = (uint32_t)(hb / nb);
        const uint32_t row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? h : 0u;
        if (GT) {
#pragma unroll
            for (uint32_t i = 0; i < G; i++) r[GT ? i : 0u] = k[(hb * G + i) * d + c];
        }
        if (RANGED) {
            /* handed-in ranges [VIDKV-DEV-07]: this is the keys' one read -- the checks
             * [VIDKV-L-03..04], and the group's extremes against its channel's range */
            /* the checks folded into the greatest magnitude bits and the least (bits - 1),
             * decided once a group, as the ternary kernel's; the extremes by fminf / fmaxf
             * from +-inf (a NaN moves neither; the call then fails) */
            float lo = __uint_as_float(0x7F800000u), hi = __uint_as_float(0xFF800000u);
            uint32_t amax = 0u, smin = 0xFFFFFFFFu;
#pragma unroll
            for (uint32_t i = 0; i < G; i++) {
                const float x0 = GT ? r[GT ? i : 0u] : k[(hb * G + i) * d + c];
                const uint32_t u = __float_as_uint(x0), a0 = u & 0x7FFFFFFFu;
                amax = max(amax, a0);
                smin = min(smin, a0 - 1u);
                const float v = daz && a0 - 1u < 0x007FFFFFu ? __uint_as_float(u & 0x80000000u) : x0;
                if (GT) r[GT ? i : 0u] = v;
                lo = fminf(lo, v);
                hi = fmaxf(hi, v);
            }
            if (amax >= 0x7F800000u) err |= VK_ERR_NONFINITE;
            else if (amax >= __float_as_uint(KVQ_VIDKV_DOMAIN)) err |= VK_ERR_RANGE;
            if (smin < 0x007FFFFFu) f |= KVQ_FLAG_SUBNORMAL;
            const bool any = lo <= hi; /* some value not a NaN */
            const uint64_t rc = (uint64_t)row * d + c;
            const float a = rmn[rc], b = rmx[rc];
#if !(defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 10) /* planted: no group is checked against its range */
            if (any && (lo < a || hi > b || !(a <= b))) err |= VK_ERR_RANGES;
#endif
            if (any && lo == a) att[rc] = 1u;
            if (any && hi == b) att[(uint64_t)(p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? p.heads : 1u) * d + rc] = 1u;
        } else if (GT && daz) {
            /* the split read every key [VIDKV-L-04] and raised SUBNORMAL: here the value only */
#pragma unroll
            for (uint32_t i = 0; i < G; i++) r[GT ? i : 0u] = vk_daz(r[GT ? i : 0u], true);
        }
        const uint32_t q = pos[(uint64_t)row * d + c];
        const bool abn = (q & 0x80000000u) != 0u;
        const float *x = k + hb * G * d + c; /* (h*T + b*G)*d + c */
        /* a NaN among the inputs (the call fails) can rank more than n_a channels
         * first: positions past their set write nothing */
        const bool inset = abn ? (q & 0x7FFFFFFFu) < na : q < nn;
        if (!inset) {
        } else if (abn || mode == KVQ_VIDKV_NORMAL_MINMAX) {
            const uint32_t bits = abn ? 2u : 1u, cmaxu = abn ? 3u : 1u;
            const uint64_t g = abn ? hb * na + (q & 0x7FFFFFFFu) : hb * nn + q;
            uint8_t *grp = (abn ? o.abn_codes : o.nrm_codes) + g * (G * bits / 8u);
            float mn = GT ? r[0] : vk_daz(x[0], daz), mx = mn, sc, z;
#pragma unroll
            for (uint32_t i = 1; i < G; i++) {
                const float v = GT ? r[GT ? i : 0u] : vk_daz(x[(uint64_t)i * d], daz);
                if (GT) {
                    /* fminf / fmaxf: one instruction each; they may pick another zero's sign
                     * than the comparisons, which moves neither z (+0 for a zero least value)
                     * nor s (RN32(mx - mn) is then +-0 or a nonzero value, the same either way,
                     * and a zero s is stored +0); a NaN fails the call */
                    mn = fminf(mn, v);
                    mx = fmaxf(mx, v);
                } else {
                    if (v < mn) mn = v;
                    if (v > mx) mx = v;
                }
            }
            vk_kivi_meta(sc, z, f, err, mn, mx, (float)cmaxu, p.meta, nanpol);
            const float rcp = sc != 0.0f ? __frcp_rn(sc) : 0.0f;
            uint32_t acc = 0, cur = 0;
            if (GT == 32u && wordst) {
                /* G = 32: the group's codes are 64 bits at most (LSB first, as the bytes
                 * hold them [KIVI-Q-06]), stored as one 8-byte (bits 2) or 4-byte (bits 1) word */
                /* The codes in 2-bit slots, element i at bit 2i of lo (i < 16) or hi: a
                 * compile-time shift, one instruction a slot; the 1-bit codes (0 or 1)
                 * compacted after.  The fast pass is vk_kivi_code_rcp's common path without
                 * its branch: qe = RN32(t * rcp) clamped to [-2, cmax + 2], rounded by the
                 * 1.5 * 2^23 addition, the code clamped to [0, cmax] (CLAMPED when that moved
                 * it); t = x - z is finite on every call that succeeds (the keys' domain
                 * [VIDKV-L-03]).  When some qe lies within 2^-12 of a half-integer, or rcp is
                 * subnormal, the whole group is coded again by vk_kivi_code_rcp (the exact
                 * quotient, the reference's rounding; the values read again), which raises
                 * its own flags. */
                uint32_t lo = 0, hi = 0;
                if (sc != 0.0f) {
                    const float cm2 = __fadd_rn((float)cmaxu, 2.0f);
                    bool slow = rcp < VK_F32_MIN_NORMAL;
                    uint32_t moved = 0;
#pragma unroll
                    for (uint32_t i = 0; i < (GT == 32u ? 32u : 1u); i++) {
                        const float t = __fsub_rn(r[GT ? i : 0u], z);
                        const float qe = fminf(fmaxf(__fmul_rn(t, rcp), -2.0f), cm2);
                        const float m = __fadd_rn(qe, VK_MAGIC_RND);
                        slow |= fabsf(__fsub_rn(qe, __fsub_rn(m, VK_MAGIC_RND))) > 0x1.ffcp-2f;
                        const int32_t c = (int32_t)(__float_as_uint(m) - VK_MAGIC_RND_BITS);
                        const uint32_t cc = (uint32_t)min(max(c, 0), (int32_t)cmaxu);
                        moved |= cc ^ (uint32_t)c;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 7
                        /* planted: the last element's code in the slot of the one before it */
                        const uint32_t sl = i == G - 1u ? i - 1u : i;
#else
                        const uint32_t sl = i;
#endif
                        if (sl < 16u) lo |= cc << (2u * sl);
                        else hi |= cc << (2u * (sl - 16u));
                    }
                    if (slow) {
                        lo = hi = 0u;
#pragma unroll
                        for (uint32_t i = 0; i < (GT == 32u ? 32u : 1u); i++) {
                            /* read again (rare): the fast pass lets go of its registers */
                            const uint32_t cc = vk_kivi_code_rcp_t<true>(vk_daz(__ldg(x + (uint64_t)i * d), daz), sc, rcp, z,
                                                                         cmaxu, away, f);
                            if (i < 16u) lo |= cc << (2u * i);
                            else hi |= cc << (2u * (i - 16u));
                        }
                    } else if (moved) {
                        f |= KVQ_FLAG_CLAMPED;
                    }
                }
                if (abn) {
                    *(unsigned long long *)grp = (unsigned long long)hi << 32 | lo;
                } else { /* 1-bit codes: bit 2i -> bit i */
                    *(uint32_t *)grp = vk_even_bits(lo) | vk_even_bits(hi) << 16;
                }
            } else {
#pragma unroll
            for (uint32_t i = 0; i < G; i++) {
                const float v = GT ? r[GT ? i : 0u] : vk_daz(x[(uint64_t)i * d], daz);
                const uint32_t code = vk_kivi_code_rcp(v, sc, rcp, z, cmaxu, away, f);
                const uint32_t by = kvq_code_byte(i, bits);
                if (by != cur) {
                    grp[cur] = (uint8_t)acc;
                    acc = 0;
                    cur = by;
                }
                acc |= code << kvq_code_shift(i, bits);
            }
            grp[cur] = (uint8_t)acc;
            }
            (abn ? o.abn_scale : o.nrm_scale)[g] = sc;
            (abn ? o.abn_zero : o.nrm_zero)[g] = z;
        } else if (mode == KVQ_VIDKV_NORMAL_SIGNMEAN) {
            const uint64_t g = hb * nn + q;
            uint8_t *grp = o.nrm_codes + g * (G / 8u);
            float S = 0.0f;
            uint32_t acc = 0;
#pragma unroll
            for (uint32_t i = 0; i < G; i++) {
                const float v = GT ? r[GT ? i : 0u] : vk_daz(x[(uint64_t)i * d], daz);
                S = __fadd_rn(S, fabsf(v));
                acc |= (v >= 0.0f ? 1u : 0u) << (i % 8u);
                if (i % 8u == 7u) {
                    grp[i / 8u] = (uint8_t)acc;
                    acc = 0;
                }
            }
            o.nrm_scale[g] = vk_store_scale(__fdiv_rn(S, (float)G), p.meta, nanpol, f, err);
        }
    }
    vk_publish(st, f, err);
}

/* Every entry of att set, or VK_ERR_RANGES [VIDKV-DEV-07]. */
__global__ void vk_att_kernel(vk_state *st, const uint32_t *att, uint64_t n)
{
    bool miss = false;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        miss |= att[i] == 0u;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 9 /* planted: unattained ends pass */
    miss = false;
#endif
    vk_publish(st, 0u, miss ? VK_ERR_RANGES : 0u);
}

void vk_att_enqueue(vk_state *st, const uint32_t *att, uint64_t n, cudaStream_t s)
{
    const unsigned int nb = vk_blocks(n, 256u) > 64u ? 64u : vk_blocks(n, 256u);
    vk_att_kernel<<<nb, 256u, 0, s>>>(st, att, n);
}

void vk_groups_enqueue(const kvq_vidkv_keys *o, vk_state *st, const float *k, const uint32_t *pos,
                       const kvq_vidkv_params *p, const kvq_policy *pol, uint32_t mode,
                       const float *rmn, const float *rmx, uint32_t *att, cudaStream_t s)
{
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p), nb = kvq_vidkv_blocks(p);
    if (na == 0u && mode == KVQ_VIDKV_NORMAL_FFT && rmn == NULL) return;
    const unsigned int nbk = vk_blocks((uint64_t)p->heads * nb * p->dim, GROUP_BS);
    const bool daz = pol->subnormal == KVQ_SUBNORMAL_DAZ, away = pol->ties == KVQ_TIES_AWAY,
               nanpol = pol->overflow == KVQ_OVERFLOW_NAN;
    /* word stores of the codes when the arrays allow them (G = 32: a group's codes are
     * 8 bytes (abnormal) and 4 bytes (normal) at a multiple of those) */
    const bool wordst = ((uintptr_t)o->abn_codes & 7u) == 0u && ((uintptr_t)o->nrm_codes & 3u) == 0u;
#define VK_KEYGROUP(GT, R)                                                                                   \
    vk_keygroup_kernel<GT, R><<<nbk, GROUP_BS, 0, s>>>(*o, st, k, pos, *p, na, nn, mode, daz, away, nanpol, wordst, \
                                                      rmn, rmx, att)
    const bool r = rmn != NULL;
    if (p->group == 32u) {
        if (r) VK_KEYGROUP(32u, true);
        else VK_KEYGROUP(32u, false);
    } else if (p->group == 64u) {
        if (r) VK_KEYGROUP(64u, true);
        else VK_KEYGROUP(64u, false);
    } else {
        if (r) VK_KEYGROUP(0u, true);
        else VK_KEYGROUP(0u, false);
    }
#undef VK_KEYGROUP
}

/* ---- dequantization ---------------------------------------------------------- */

/* Mask rows [VIDKV-D-02]: *bad = 0 (cleared to all ones before) when a row has a bit beyond d or a count
 * other than na; a valid mask's channel lists and positions are written.  One
 * warp a row (block of 32): the set bits counted 32 channels at a time by a
 * ballot, each channel's place in its list the set (or clear) bits below it. */
__global__ void vk_mask_check_kernel(uint32_t *bad, uint32_t *lists, uint32_t *pos,
                                     const uint8_t *mask, uint32_t rows, uint32_t d, uint32_t na,
                                     uint32_t row_bytes)
{
    const uint32_t row = blockIdx.x, lane = threadIdx.x;
    if (row >= rows) return;
    const uint8_t *m = mask + (uint64_t)row * row_bytes;
    uint32_t n = 0;
    bool beyond = false;
    for (uint32_t c0 = 0; c0 < 8u * row_bytes; c0 += 32u) {
        const uint32_t c = c0 + lane;
        const bool bit = c < 8u * row_bytes && kvq_vidkv_mask_get(m, c);
        beyond |= bit && c >= d;
        n += __popc(__ballot_sync(0xFFFFFFFFu, bit));
    }
    if (__any_sync(0xFFFFFFFFu, beyond) || n != na) {
        if (lane == 0u) *bad = 0u;
        return;
    }
    uint32_t *L = lists + (uint64_t)row * d, *P = pos + (uint64_t)row * d;
    for (uint32_t c0 = 0, ia = 0; c0 < d; c0 += 32u) {
        const uint32_t c = c0 + lane;
        const bool bit = c < d && kvq_vidkv_mask_get(m, c);
        const uint32_t bal = __ballot_sync(0xFFFFFFFFu, bit), below = ia + __popc(bal & ((1u << lane) - 1u));
        if (c < d) {
            if (bit) {
                L[below] = c;
                P[c] = below | 0x80000000u;
            } else {
                L[na + (c - below)] = c;
                P[c] = c - below;
            }
        }
        ia += __popc(bal);
    }
}

/* The stored metadata checks of up to four arrays (grid.y the array): key[a] the
 * first failure of array a (group * 16 + status, min). */
typedef struct vk_meta4 {
    const float *a[4];
    uint64_t n[4];
} vk_meta4;
__global__ void vk_meta_check4_kernel(unsigned long long *key, vk_meta4 m, uint32_t meta)
{
    const uint32_t y = blockIdx.y;
    /* selected by value, not by a runtime index into the parameter array (no local copy) */
    const float *a = y == 0u ? m.a[0] : y == 1u ? m.a[1] : y == 2u ? m.a[2] : m.a[3];
    const uint64_t n = y == 0u ? m.n[0] : y == 1u ? m.n[1] : y == 2u ? m.n[2] : m.n[3];
    if (a == NULL) return;
    const bool is_scale = y == 0u || y == 2u;
    unsigned long long best = ~0ull;
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t s = vk_meta_ok(a[g], is_scale, meta);
        if (s != KVQ_OK && best == ~0ull) best = (unsigned long long)g * 16u + s; /* g ascends */
    }
    if (best != ~0ull) atomicMin(&key[y], best);
}

/* The checks [VIDKV-D-02..03] enqueued: key[0..3] the first bad value of abn_scale,
 * abn_zero, nrm_scale, nrm_zero (group * 16 + status), *bad the mask's verdict (0: malformed);
 * the five words contiguous, cleared to all ones by one memset. */
static kvq_status keys_check_enqueue(unsigned long long *key, uint32_t *bad, const kvq_vidkv_keys *in,
                                     const kvq_vidkv_params *p, uint32_t mode, uint32_t *lists, uint32_t *pos,
                                     cudaStream_t s)
{
    kvq_status st = KVQ_OK;
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p);
    const float *arr[4] = {na ? in->abn_scale : NULL, na ? in->abn_zero : NULL,
                           nn ? in->nrm_scale : NULL,
                           nn && mode == KVQ_VIDKV_NORMAL_MINMAX ? in->nrm_zero : NULL};
    const uint64_t cnt[4] = {kvq_vidkv_abn_groups(p), kvq_vidkv_abn_groups(p),
                             kvq_vidkv_nrm_groups(p), kvq_vidkv_nrm_groups(p)};
    VK_CK(cudaMemsetAsync(key, 0xFF, 4 * sizeof *key + sizeof *bad, s)); /* bad = (uint32_t *)(key + 4) */
    vk_mask_check_kernel<<<kvq_vidkv_mask_rows(p), 32u, 0, s>>>(
        bad, lists, pos, in->mask, kvq_vidkv_mask_rows(p), p->dim, na, kvq_vidkv_mask_row_bytes(p));
    {
        vk_meta4 m;
        uint64_t mx = 0;
        for (int a = 0; a < 4; a++) {
            m.a[a] = arr[a];
            m.n[a] = arr[a] != NULL ? cnt[a] : 0u;
            if (m.n[a] > mx) mx = m.n[a];
        }
        if (mx > 0u) {
            /* a thread a value up to 2^16 blocks (every load in flight at once; a grid-stride
             * loop of one load a trip is latency-bound) */
            const unsigned int nb = vk_blocks(mx, 256u) > 65535u ? 65535u : vk_blocks(mx, 256u);
            vk_meta_check4_kernel<<<dim3(nb, 4u), 256u, 0, s>>>(key, m, p->meta);
        }
    }
    VK_CK(cudaGetLastError());
out:
    return st;
}

/* The status of the checks' words, in the reference's order [VIDKV-D-03]. */
static kvq_status keys_check_status(const unsigned long long *hk, uint32_t hbad)
{
    if (hbad != ~0u) return KVQ_E_PARAM;
    for (int a = 0; a < 4; a++)
        if (hk[a] != 0xFFFFFFFFFFFFFFFFull) return (kvq_status)(hk[a] % 16u);
    return KVQ_OK;
}

/* One thread a (head, block, channel) group, consecutive threads consecutive
 * channels (every row's store one coalesced segment of the warp): the group's
 * metadata read once, its codes from its own bytes, G elements down the
 * column: RN32(code * s + z) [KIVI-D-01] (abnormal; MINMAX), code ? s : 0
 * (SIGNMEAN); FFT normal channels skipped.  Written only when every check
 * passed (the words of keys_check_enqueue, read first) [VIDKV-DEV-04]. */
template <uint32_t GT>
__global__ void __launch_bounds__(128)
vk_keys_deq_group_kernel(float *y, kvq_vidkv_keys in, const uint32_t *pos, const unsigned long long *key,
                         const uint32_t *bad, kvq_vidkv_params p, uint32_t na, uint32_t nn, uint32_t mode,
                         bool wordld)
{
#if !(defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 5) /* planted: written whatever the checks found */
    if (*bad != ~0u || (key[0] & key[1] & key[2] & key[3]) != ~0ull) return;
#endif
    const uint32_t G = GT ? GT : p.group, d = p.dim, nb = p.tokens / G;
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, ng = (uint64_t)p.heads * nb * d;
    if (gid >= ng) return;
    uint64_t hb;
    uint32_t c;
    vk_divmod(gid, ng, d, hb, c);
    const uint32_t row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? (uint32_t)(hb / nb) : 0u;
    const uint32_t q = pos[(uint64_t)row * d + c];
    const bool abn = (q & 0x80000000u) != 0u;
    if (!abn && mode == KVQ_VIDKV_NORMAL_FFT) return;
    const uint32_t bits = abn ? 2u : 1u, mask = abn ? 3u : 1u;
    const uint64_t g = abn ? hb * na + (q & 0x7FFFFFFFu) : hb * nn + q;
    const uint8_t *grp = abn ? in.abn_codes + g * (G / 4u) : in.nrm_codes + g * (G / 8u);
    const float s = abn ? in.abn_scale[g] : in.nrm_scale[g];
    const float z = abn ? in.abn_zero[g] : mode == KVQ_VIDKV_NORMAL_MINMAX ? in.nrm_zero[g] : 0.0f;
    /* SIGNMEAN's code ? s : +0 as the bits of s masked by the code, selected by bits too:
     * no branch per element */
    const uint32_t smask = !abn && mode == KVQ_VIDKV_NORMAL_SIGNMEAN ? 0xFFFFFFFFu : 0u, sb = __float_as_uint(s);
    float *out = y + hb * G * d + c;
    if (GT == 32u && wordld) {
        /* G = 32: the group's codes as one 8-byte (bits 2) or 4-byte (bits 1) load */
        const unsigned long long w = abn ? *(const unsigned long long *)grp : *(const uint32_t *)grp;
#pragma unroll
        for (uint32_t i = 0; i < (GT == 32u ? 32u : 1u); i++) {
            const uint32_t code = (uint32_t)(w >> (i * bits)) & mask;
            const uint32_t a = __float_as_uint(__fmaf_rn((float)code, s, z)), b = sb & (0u - code);
            out[(uint64_t)i * d] = __uint_as_float((a & ~smask) | (b & smask));
        }
        return;
    }
#pragma unroll
    for (uint32_t i = 0; i < G; i++) {
        const uint32_t code = (grp[(i * bits) >> 3] >> ((i * bits) & 7u)) & mask;
        const uint32_t a = __float_as_uint(__fmaf_rn((float)code, s, z)), b = sb & (0u - code);
        out[(uint64_t)i * d] = __uint_as_float((a & ~smask) | (b & smask));
    }
}

kvq_status vk_mask_lists(uint32_t *lists, uint32_t *pos, const uint8_t *mask,
                         const kvq_vidkv_params *p, void *scratch, cudaStream_t s)
{
    kvq_status st = KVQ_OK;
    uint32_t *bad = (uint32_t *)scratch, hbad = 0;
    VK_CK(cudaMemsetAsync(bad, 0xFF, sizeof *bad, s));
    vk_mask_check_kernel<<<kvq_vidkv_mask_rows(p), 32u, 0, s>>>(
        bad, lists, pos, mask, kvq_vidkv_mask_rows(p), p->dim, kvq_vidkv_n_abn(p),
        kvq_vidkv_mask_row_bytes(p));
    VK_CK(cudaGetLastError());
    VK_CK(vk_readback(&hbad, bad, sizeof hbad, s));
    if (hbad != ~0u) st = KVQ_E_PARAM;
out:
    return st;
}

kvq_status vk_keys_deq_gated(float *y, const kvq_vidkv_keys *in, const kvq_vidkv_params *p, uint32_t mode,
                             uint32_t *lists, uint32_t *pos, void *scratch, cudaStream_t s, bool elements)
{
    kvq_status st;
    unsigned long long *key = (unsigned long long *)scratch, hk[4], hw[5];
    uint32_t *bad = (uint32_t *)(key + 4), hbad = 0;
    const uint32_t na = kvq_vidkv_n_abn(p), nn = kvq_vidkv_n_nrm(p);
    const uint64_t ng = (uint64_t)p->heads * kvq_vidkv_blocks(p) * p->dim;
    if ((st = keys_check_enqueue(key, bad, in, p, mode, lists, pos, s)) != KVQ_OK) return st;
    const bool wordld = ((uintptr_t)in->abn_codes & 7u) == 0u && ((uintptr_t)in->nrm_codes & 3u) == 0u;
    if (!elements) {
    } else if (p->group == 32u)
        vk_keys_deq_group_kernel<32u><<<vk_blocks(ng, 128u), 128u, 0, s>>>(y, *in, pos, key, bad, *p, na, nn, mode,
                                                                           wordld);
    else if (p->group == 64u)
        vk_keys_deq_group_kernel<64u><<<vk_blocks(ng, 128u), 128u, 0, s>>>(y, *in, pos, key, bad, *p, na, nn, mode,
                                                                           wordld);
    else
        vk_keys_deq_group_kernel<0u><<<vk_blocks(ng, 128u), 128u, 0, s>>>(y, *in, pos, key, bad, *p, na, nn, mode,
                                                                          wordld);
    VK_CK(cudaGetLastError());
    /* the four keys and the mask word, contiguous: one read-back */
    VK_CK(vk_readback(hw, key, sizeof hw, s));
    memcpy(hk, hw, sizeof hk);
    memcpy(&hbad, hw + 4, sizeof hbad);
    st = keys_check_status(hk, hbad);
out:
    return st;
}

