/*
 * decode_phase2p.cu -- Phase 2 of the paper variant of the certified CERT
 * decode step on CUDA (cert_phase2p_kernel; decode_common.cuh says how the
 * step is split; spec/cert.md [CERT-DEV-10]): every block attended, the
 * selected blocks and the residual with their binary16 keys, the others with
 * Phase 1's scores (k^); INT4 values [CERT-V4-02] except where the originals
 * are read; then the combine, one CTA a head (cert_combine_p_kernel): the
 * output, E_arith [CERT-AR-01], the record; and their launch.
 *
 * Work, CTAs of P2P_THREADS, as many as the device holds at once, each
 * drawing items until none is left (cert_phase2p_kernel says in which order):
 *   - a *segment*: SEG_BLOCKS consecutive full blocks of a KV head and up to
 *     four heads of its group, with the scores s~ Phase 1 kept (ws.sc) and
 *     the INT4 values dequantized once for the four heads.  The early pass
 *     (ws.overlap) takes every segment with all its tokens while the select
 *     kernel runs: entry nb + s; the segments in which a head of the pass
 *     selects a block come again after the selection with the masks (a
 *     selected block's tokens have no term): entry nb + nseg + s.  Without
 *     the early pass, every segment once after the selection with the masks:
 *     entry nb + s (a head that selects every block of the segment gets an
 *     empty entry: m = -inf, l = 0);
 *   - a *listed block* (ws.post, appended by the select kernel) or the
 *     residual: the block's binary16 keys (tier 2, mapped pinned host memory;
 *     the residual's device copy) and values (INT4 of tier 1, and the
 *     originals when a head reads them: promoted blocks, rung 3, the
 *     residual) are read once into shared memory, and each head that selects
 *     the block scores it there (one warp a head): entry b of that head.
 * Each entry is (m_e, l_e, acc_e): m_e its greatest score, l_e and acc_e the
 * sums of w = expf(RN(s - m_e)) and w v~.  cert_combine_p_kernel, a
 * programmatic dependent of this kernel, then combines each head's entries
 * (one CTA a head, all heads at once).
 * SPEC: [CERT-DEV-10] [CERT-AR-01] [CERT-V4-02] [CERT-K8-03]
 */
#include "decode_common.cuh"

#ifndef KVQ_CERT_PLANT
#define KVQ_CERT_PLANT 0     /* 1: a planted bug the device check must catch (a segment
                              * recomputed after the selection keeps the selected tokens) */
#endif

/* shared memory: a segment's and a special item's share Phase 2's dynamic
 * buffer; the combine kernel has its own */
#define SEG_RT      16u              /* tokens a round of a warp's walk */
#define SEG_STAGE   2048u            /* bytes a round: codes [16][64], scale and zero [16][8] */
struct seg_smem {
    float w[SEG_TOK][4];             /* the segment's weights, four heads a token */
    union {
        uint8_t stage[P2P_WARPS][2][SEG_STAGE]; /* each warp's two rounds of values */
        float red[P2P_WARPS][4][128];           /* the warps' sums of a 128-channel slab */
    } u;
};
#define CMB_FLIGHT  8u               /* the combine's entry loads in flight a thread */
struct cmb_smem {
    float alpha[P2P_TILE];           /* expf(RN(m_e - M)) of a tile's entries */
    uint32_t idx[P2P_TILE];          /* their storage index */
    float red[1024];                 /* the parts' sums: P * d <= 1024 */
    float lred[8];
};
/* a special CTA: the block's keys and original values (binary16) and its
 * INT4 values dequantized (binary32), 16 x d each */
static __host__ __device__ size_t spc_bytes(uint32_t d)
{
    return (size_t)KVQ_CERT_BLOCK * d * (2u + 2u + 4u);
}

/* ---- the combine ----------------------------------------------------------
 * cert_combine_p_kernel, one CTA a query head.  Head qh's entries in a fixed
 * order: its list (selected blocks in index order, the residual; every block
 * at rung 3; stored at the block's index), then its segments (at nb + s).  M = max m_e; alpha_e = expf(RN(m_e -
 * M)) (one rescaling a token, Nr = 1); a tile of P2P_TILE entries at a time,
 * split into P consecutive parts, each summed by the threads of its part
 * (four channels a thread, RN(acc_e alpha_e) added in order); the parts'
 * sums are then added in part order.  A term meets <= ceil(T/P) additions a
 * tile and P in the last sum: <= nent + 16 in all (P >= 2, d <= 512). */
template <bool CERT>
__device__ void p2p_combine(const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                            uint32_t qh, cmb_smem &C, float *d_out, kvq_cert_record *d_rec,
                            kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                            float eps_dense)
{
    __shared__ float rr[P2P_WARPS][3];
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nb = kvq_cert_blocks(&sh);
    const head_info I = ws.info[qh];
    const uint32_t tent = I.nent, nent = tent + ws.nseg;
    const uint64_t p0 = (uint64_t)qh * ws.ent;
    const uint32_t *list = ws.list + (uint64_t)qh * nb;
    /* segment s: the entry recomputed after the selection when the head
     * selects a block of it (the early one holds its selected tokens too),
     * else the early one, which equals it bit for bit [CERT-DEV-10] */
    const uint32_t *segm = ws.segm + (uint64_t)(qh / h.group) * ws.nseg, gb = qh % h.group;
    auto entry = [&](uint32_t j) -> uint32_t {
        if (j < tent) return list[j] & ENT_BLOCK;
        const uint32_t sg = j - tent;
        return ws.overlap && ((segm[sg] >> gb) & 1u) ? nb + ws.nseg + sg : nb + sg;
    };
    /* one tile (nent <= P2P_TILE): each entry's index and m_e kept from this
     * pass for the tile's, so that its loads are not made twice */
    const bool one = nent <= P2P_TILE;
    float M = -INFINITY, smin = INFINITY, amax = 0.0f;
    for (uint32_t j = tid; j < nent; j += blockDim.x) {
        const uint32_t e = entry(j);
        const float me = __ldcg(ws.pm + p0 + e);
        if (one) {
            C.idx[j] = e;
            C.alpha[j] = me;
        }
        M = fmaxf(M, me);
        if (CERT) {
            smin = fminf(smin, __ldcg(ws.pmin + p0 + e));
            amax = fmaxf(amax, __ldcg(ws.pab + p0 + e));
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
        smin = fminf(smin, __shfl_xor_sync(0xffffffffu, smin, o));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    }
    if (lane == 0u) {
        rr[warp][0] = M;
        rr[warp][1] = smin;
        rr[warp][2] = amax;
    }
    __syncthreads();
    for (uint32_t w = 0; w < P2P_WARPS; w++) {
        M = fmaxf(M, rr[w][0]);
        smin = fminf(smin, rr[w][1]);
        amax = fmaxf(amax, rr[w][2]);
    }
    const uint32_t nqd = d / 4u, P = min(8u, P2P_THREADS / nqd);
    const uint32_t p = tid / nqd, qd = tid % nqd;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float lp = 0.0f;
    for (uint32_t base = 0; base < nent; base += P2P_TILE) {
        const uint32_t top = min(nent, base + P2P_TILE), T = top - base;
        __syncthreads();
        for (uint32_t j = base + tid; j < top; j += blockDim.x) {
            if (one) {                                   /* this thread's own pass-1 entries */
                C.alpha[j] = expf(__fsub_rn(C.alpha[j], M));  /* m_e = -inf: 0 */
                continue;
            }
            const uint32_t e = entry(j);
            C.idx[j - base] = e;
            C.alpha[j - base] = expf(__fsub_rn(__ldcg(ws.pm + p0 + e), M)); /* m_e = -inf: 0 */
        }
        __syncthreads();
        if (p < P) {
            const uint32_t ch = (T + P - 1u) / P, j0 = min(T, p * ch), j1 = min(T, j0 + ch);
            for (uint32_t j = j0; j < j1; j += CMB_FLIGHT) {
                /* CMB_FLIGHT entries' loads in flight, then their sums in order */
                float4 v[CMB_FLIGHT];
                float lv[CMB_FLIGHT];
#pragma unroll
                for (uint32_t u = 0; u < CMB_FLIGHT; u++) {
                    v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    lv[u] = 0.0f;
                    if (j + u < j1) {
                        const uint64_t e = p0 + C.idx[j + u];
                        v[u] = __ldcg((const float4 *)(ws.pacc + e * d) + qd);
                        if (qd == 0u) lv[u] = __ldcg(ws.pl + e);
                    }
                }
#pragma unroll
                for (uint32_t u = 0; u < CMB_FLIGHT; u++) {
                    if (j + u >= j1) break;
                    const float al = C.alpha[j + u];
                    a.x = __fadd_rn(a.x, __fmul_rn(v[u].x, al));
                    a.y = __fadd_rn(a.y, __fmul_rn(v[u].y, al));
                    a.z = __fadd_rn(a.z, __fmul_rn(v[u].z, al));
                    a.w = __fadd_rn(a.w, __fmul_rn(v[u].w, al));
                    if (qd == 0u) lp = __fadd_rn(lp, __fmul_rn(lv[u], al));
                }
            }
        }
    }
    __syncthreads();
    if (p < P) {
        *(float4 *)&C.red[p * d + 4u * qd] = a;
        if (qd == 0u) C.lred[p] = lp;
    }
    __syncthreads();
    float l = 0.0f;
    for (uint32_t k = 0; k < P; k++) l = __fadd_rn(l, C.lred[k]);
    for (uint32_t c = tid; c < d; c += blockDim.x) {
        float x = 0.0f;
        for (uint32_t k = 0; k < P; k++) x = __fadd_rn(x, C.red[k * d + c]);
        d_out[(uint64_t)qh * d + c] = __fdiv_rn(x, l);
    }
    if (tid != 0) return;
    finish_head<CERT>(I, sh, ws, qh, h.scale, M, smin, amax, P2P_D(nent) /* [CERT-DEV-10] */,
                      nent, eps_dense, d_rec, d_decl, d_delta1, d_status);
}

/* ---- a segment ------------------------------------------------------------
 * Heads g0 .. g0 + np - 1 of KV head kv, full blocks b0 .. b0 + nbs - 1.
 * Thread t takes head t / 64 and the tokens t % 64 + 64 i (i < 8): their
 * Phase-1 scores, unless the head selects the token's block (then no term);
 * each head's maximum m over its 64 threads, its weights w = expf(RN(s - m))
 * to shared memory, l = the thread's sum (in i order) summed by a butterfly
 * over the warp and the head's two warps in order.  Values: warp w walks the
 * tokens 64 w .. 64 w + 63 in order, 16 a round, each round's codes, scale and
 * offset copied to shared memory with cp.async one round ahead (the first
 * before the scores are read); lane L holds channels c0 + 4 L .. + 3 of a
 * 128-channel slab, forms v^ = fmaf(code, s, zv) once a token [CERT-V4-02]
 * and acc = fmaf(w, v^, acc) for the four heads (one rounding a step); the
 * eight warps' sums are added in warp order. */
template <bool CERT>
__device__ void p2p_segment(const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                            uint32_t kv, uint32_t g0, uint32_t seg, bool masked, uint32_t dst,
                            seg_smem &G)
{
    __shared__ uint32_t msk[SEG_BLOCKS];
    __shared__ float hm[P2P_WARPS], hl[P2P_WARPS], hn[P2P_WARPS], ha[P2P_WARPS];
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t n16 = KVQ_CERT_BLOCK * nq;
    const uint32_t np = min(4u, h.group - g0), b0 = seg * SEG_BLOCKS;
    const uint32_t nbs = min(SEG_BLOCKS, nq - b0), ntk = nbs * KVQ_CERT_BLOCK;
    const uint8_t *vc = h.d_vcodes + (uint64_t)kv * kvq_cert_value_code_bytes(&sh);
    const float *vs = h.d_vscale + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const float *vz = h.d_vzero + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const uint32_t tw0 = SEG_WB * KVQ_CERT_BLOCK * warp;
    const uint32_t twn = ntk > tw0 ? min(SEG_WB * KVQ_CERT_BLOCK, ntk - tw0) : 0u;
    const uint32_t nrd = twn / SEG_RT;
    /* one round of the warp's values (slab c0, round r) into stage st: the
     * codes' cw / 2 bytes and the cw / 16 scales and offsets of each token;
     * 16-byte pieces when d is a multiple of 128, else 8 and 4 bytes */
    const bool wide = d % 128u == 0u;
    const uint32_t gpt = d / 16u;                           /* value groups a token */
    auto issue = [&](uint32_t c0, uint32_t r, uint32_t st) {
        const uint32_t cw = min(128u, d - c0), tok0 = KVQ_CERT_BLOCK * b0 + tw0 + SEG_RT * r;
        uint8_t *sb = G.u.stage[warp][st];
        if (wide) {
            /* a whole slab, 16-byte pieces: the same copies as below with their
             * indices in closed form (pieces lane and lane + 32 of the codes,
             * 64 bytes a token; of the metadata, the scales' piece lane and the
             * offsets' piece lane, 32 bytes a token and array) */
#pragma unroll
            for (uint32_t k = 0; k < 2u; k++) {
                const uint32_t p = lane + 32u * k, i = p >> 2, x = p & 3u;
                __pipeline_memcpy_async(sb + 16u * p,
                                        vc + ((uint64_t)(tok0 + i) * gpt + c0 / 16u) * 8u + 16u * x, 16u);
            }
            const uint64_t g = (uint64_t)(tok0 + (lane >> 1)) * gpt + c0 / 16u + 4u * (lane & 1u);
            __pipeline_memcpy_async(sb + 1024u + 16u * lane, vs + g, 16u);
            __pipeline_memcpy_async(sb + 1536u + 16u * lane, vz + g, 16u);
            __pipeline_commit();
            return;
        }
        const uint32_t cb = wide ? 16u : 8u, pc = cw / 2u / cb;       /* code pieces a token */
        for (uint32_t p = lane; p < SEG_RT * pc; p += 32u) {
            const uint32_t i = p / pc, x = p % pc;
            __pipeline_memcpy_async(sb + 64u * i + cb * x,
                                    vc + kvq_cert_value_code_offset(&sh, tok0 + i, c0 / 16u) + cb * x, cb);
        }
        const uint32_t mb = wide ? 16u : 4u, pm = cw / 16u * 4u / mb; /* meta pieces a token and array */
        for (uint32_t p = lane; p < 2u * SEG_RT * pm; p += 32u) {
            const bool isz = p >= SEG_RT * pm;
            const uint32_t y = isz ? p - SEG_RT * pm : p, i = y / pm, x = y % pm;
            __pipeline_memcpy_async(sb + 1024u + (isz ? 512u : 0u) + 32u * i + mb * x,
                                    (const uint8_t *)((isz ? vz : vs) +
                                                      kvq_cert_value_group(&sh, tok0 + i, c0 / 16u)) + mb * x,
                                    mb);
        }
        __pipeline_commit();
    };
    if (nrd > 0u) issue(0u, 0u, 0u);
    if (tid < SEG_BLOCKS) {
        uint32_t x = ~0u;                                   /* past the last full block */
        if (tid < nbs) {
            x = masked ? __ldcg(ws.selm + (uint64_t)kv * nb + b0 + tid) >> g0 : 0u;
#if KVQ_CERT_PLANT == 1
            if (dst >= nb + ws.nseg) x = 0u;                /* planted bug: a recomputed segment
                                                             * keeps the selected tokens */
#endif
        }
        msk[tid] = x;
    }
    __syncthreads();
    /* scores, maxima, weights */
    const uint32_t hh = tid >> 6, j0 = tid & 63u;
    const uint32_t qh = kv * h.group + g0 + hh;
    float s[8];
    float mx = -INFINITY, mn = INFINITY, ab = 0.0f;
    uint32_t okm = 0u;                                       /* bit i: token j0 + 64 i has a term */
    const float *scp = ws.sc + (uint64_t)qh * n16 + KVQ_CERT_BLOCK * b0;
#pragma unroll
    for (uint32_t i = 0; i < 8u; i++) {
        const uint32_t t = j0 + 64u * i;
        s[i] = 0.0f;
        if (hh < np && t < ntk && ((msk[t / KVQ_CERT_BLOCK] >> hh) & 1u) == 0u) {
            okm |= 1u << i;
            s[i] = __ldcg(scp + t);
        }
    }
#pragma unroll
    for (uint32_t i = 0; i < 8u; i++) {
        if (!((okm >> i) & 1u)) continue;
        mx = fmaxf(mx, s[i]);
        mn = fminf(mn, s[i]);
        if (CERT) ab = fmaxf(ab, ws.ab[(uint64_t)qh * nb + b0 + (j0 + 64u * i) / KVQ_CERT_BLOCK]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
        ab = fmaxf(ab, __shfl_xor_sync(0xffffffffu, ab, o));
    }
    if (lane == 0u) {
        hm[warp] = mx;
        hn[warp] = mn;
        ha[warp] = ab;
    }
    __syncthreads();
    const float m = fmaxf(hm[2u * hh], hm[2u * hh + 1u]);  /* the head's two warps */
    float l = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < 8u; i++) {
        const float w = ((okm >> i) & 1u) ? expf(__fsub_rn(s[i], m)) : 0.0f;
        G.w[j0 + 64u * i][hh] = w;
        l = __fadd_rn(l, w);
    }
    for (int o = 16; o > 0; o >>= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, o));
    if (lane == 0u) hl[warp] = l;
    __syncthreads();
    if (tid < np) {                                         /* the entry's scalars */
        const uint64_t at = (uint64_t)(kv * h.group + g0 + tid) * ws.ent + dst;
        ws.pm[at] = fmaxf(hm[2u * tid], hm[2u * tid + 1u]);
        ws.pl[at] = __fadd_rn(hl[2u * tid], hl[2u * tid + 1u]);
        if (CERT) {
            ws.pmin[at] = fminf(hn[2u * tid], hn[2u * tid + 1u]);
            ws.pab[at] = fmaxf(ha[2u * tid], ha[2u * tid + 1u]);
        }
    }
    /* values */
    for (uint32_t c0 = 0; c0 < d; c0 += 128u) {
        const uint32_t cw = min(128u, d - c0);
        float acc[4][4];
#pragma unroll
        for (uint32_t i = 0; i < 4u; i++)
#pragma unroll
            for (uint32_t x = 0; x < 4u; x++) acc[i][x] = 0.0f;
        if (c0 > 0u && nrd > 0u) issue(c0, 0u, 0u);       /* the stages are free again */
        for (uint32_t r = 0; r < nrd; r++) {
            if (r + 1u < nrd) {
                issue(c0, r + 1u, (r + 1u) & 1u);
                __pipeline_wait_prior(1);                   /* round r has landed (this lane's) */
            } else {
                __pipeline_wait_prior(0);
            }
            __syncwarp();                                   /* ... and every lane's */
            const uint8_t *sb = G.u.stage[warp][r & 1u];
            if (4u * lane < cw) {
#pragma unroll 4
                for (uint32_t u = 0; u < SEG_RT; u++) {
                    const uint32_t wd = *(const uint16_t *)(sb + 64u * u + 2u * lane);
                    /* nibbles 0, 2 and 1, 3 as bytes 0, 1 of two words, each put
                     * under the exponent byte 0x4B by a byte permutation: the
                     * word 0x4B0000cc of the code cc, as a mask and an OR give */
                    const uint32_t n02 = wd & 0x0F0Fu, n13 = (wd >> 4) & 0x0F0Fu;
                    const uint32_t cb[4] = {__byte_perm(n02, 0x4B000000u, 0x7440u),
                                            __byte_perm(n13, 0x4B000000u, 0x7440u),
                                            __byte_perm(n02, 0x4B000000u, 0x7441u),
                                            __byte_perm(n13, 0x4B000000u, 0x7441u)};
                    const float sc = *(const float *)(sb + 1024u + 32u * u + 4u * (lane >> 2));
                    const float zv = *(const float *)(sb + 1536u + 32u * u + 4u * (lane >> 2));
                    const float4 wv = *(const float4 *)&G.w[tw0 + SEG_RT * r + u][0];
#pragma unroll
                    for (uint32_t x = 0; x < 4u; x++) {
                        /* element 4 (lane % 4) + x of its group: nibble x of the
                         * 16-bit word [LAY-PACK-01]; the code's exact binary32
                         * value is (2^23 + code) - 2^23 */
                        const float cf = __fsub_rn(__uint_as_float(cb[x]), 0x1p+23f);
                        const float v = __fmaf_rn(cf, sc, zv);              /* [CERT-V4-02] */
                        acc[0][x] = __fmaf_rn(wv.x, v, acc[0][x]);
                        acc[1][x] = __fmaf_rn(wv.y, v, acc[1][x]);
                        acc[2][x] = __fmaf_rn(wv.z, v, acc[2][x]);
                        acc[3][x] = __fmaf_rn(wv.w, v, acc[3][x]);
                    }
                }
            }
            __syncwarp();                                   /* done with this stage */
        }
        __syncthreads();                                    /* every warp's stages free: red */
#pragma unroll
        for (uint32_t i = 0; i < 4u; i++)
            *(float4 *)&G.u.red[warp][i][4u * lane] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        __syncthreads();
        for (uint32_t k = 0; k < 2u; k++) {
            const uint32_t hx = (tid >> 7) + 2u * k, cc = tid & 127u;
            if (hx < np && cc < cw) {
                float x = 0.0f;
#pragma unroll
                for (uint32_t w = 0; w < P2P_WARPS; w++) x = __fadd_rn(x, G.u.red[w][hx][cc]);
                ws.pacc[((uint64_t)(kv * h.group + g0 + hx) * ws.ent + dst) * d + c0 + cc] = x;
            }
        }
        __syncthreads();
    }
}

/* ---- a selected block or the residual -------------------------------------
 * Block b of KV head kv (b = nq: the residual block), for the heads of
 * `mask` (bit g: head g of the group); `orig`: the heads that read its
 * original values.  The CTA reads the keys (and the values it needs) once
 * into shared memory; warp w takes the mask's heads w, w + 8, ...: scores as
 * the sparse Phase 2 scores originals (lane L = 8 tj + cg: tokens tj + 4 j,
 * channels 128 m + 16 cg + 0..15, fmaf chains, three levels over the 8 lanes,
 * one rounding for the scale: <= d + 1 roundings a term), with A_e the
 * upward maximum of sum_c |q_c||k_c| over its tokens; the entry's max m_e,
 * w = expf(RN(s - m_e)), l_e by a four-level tree, acc_e[c] = sum_t RN(w_t
 * v~_tc) in token order. */
template <bool CERT>
__device__ void p2p_special(const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                            uint32_t kv, uint32_t b, uint32_t mask, uint32_t orig, uint8_t *smem)
{
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const uint32_t cg = lane & 7u, tj = lane >> 3;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh), mc = (d + 127u) / 128u;
    const bool res = b == nq;
    const uint32_t ntok = res ? nres : KVQ_CERT_BLOCK;
    uint16_t *Ks = (uint16_t *)smem;                       /* [16][d] */
    uint16_t *Vo = Ks + KVQ_CERT_BLOCK * d;                /* [16][d] */
    float *Vq = (float *)(Vo + KVQ_CERT_BLOCK * d);        /* [16][d] */
    const bool need_o = (mask & orig) != 0u, need_q = (mask & ~orig) != 0u;
    const uint16_t *ksrc = res ? h.d_kres + (uint64_t)kv * nres * d
                               : h.t2_k + (uint64_t)kv * sh.tokens * d + kvq_cert_in_index(&sh, kvq_cert_block_first(b), 0);
    const uint16_t *vsrc = res ? h.d_vres + (uint64_t)kv * nres * d
                               : h.t2_v + (uint64_t)kv * sh.tokens * d + kvq_cert_in_index(&sh, kvq_cert_block_first(b), 0);
    /* keys and original values: 16-byte pieces, tokens past ntok zero */
    const uint32_t pr = d / 8u;                            /* pieces a token row */
    for (uint32_t x = tid; x < 2u * KVQ_CERT_BLOCK * pr; x += blockDim.x) {
        const bool isv = x >= KVQ_CERT_BLOCK * pr;
        const uint32_t y = isv ? x - KVQ_CERT_BLOCK * pr : x, i = y / pr;
        if (isv && !need_o) continue;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (i < ntok) v = ((const uint4 *)(isv ? vsrc : ksrc))[y];
        ((uint4 *)(isv ? Vo : Ks))[y] = v;
    }
    if (need_q) {                                          /* INT4 values [CERT-V4-02] */
        const uint8_t *vc = h.d_vcodes + (uint64_t)kv * kvq_cert_value_code_bytes(&sh);
        const float *vs = h.d_vscale + (uint64_t)kv * kvq_cert_value_groups(&sh);
        const float *vz = h.d_vzero + (uint64_t)kv * kvq_cert_value_groups(&sh);
        for (uint32_t x = tid; x < KVQ_CERT_BLOCK * d; x += blockDim.x) {
            const uint32_t i = x / d, c = x % d, tok = kvq_cert_block_first(b) + i;
            uint32_t el;
            const uint32_t j = kvq_cert_value_group_of(c, &el);
            const uint64_t gi = kvq_cert_value_group(&sh, tok, j);
            const uint32_t code = kvq_unpack_code(vc + kvq_cert_value_code_offset(&sh, tok, j), el,
                                                  KVQ_CERT_VBITS);
            Vq[x] = __fmaf_rn((float)code, vs[gi], vz[gi]);
        }
    }
    __syncthreads();
    const uint32_t nh = (uint32_t)__popc(mask);
    for (uint32_t k = warp; k < nh; k += P2P_WARPS) {
        /* the k-th head of the mask */
        uint32_t mm = mask;
        for (uint32_t r = 0; r < k; r++) mm &= mm - 1u;
        const uint32_t g = (uint32_t)(__ffs(mm) - 1), qh = kv * h.group + g;
        const bool ov = ((orig >> g) & 1u) != 0u;
        const float *q = h.d_q + (uint64_t)qh * d;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, aab[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint32_t m = 0; m < mc; m++) {
            const uint32_t c0 = 128u * m + 16u * cg;
            if (c0 >= d) break;
            /* each token's chain runs over the channels in order (m, w, x),
             * as in the sparse Phase 2 */
#pragma unroll
            for (uint32_t w = 0; w < 4u; w++) {
                const float4 q4 = *(const float4 *)(q + c0 + 4u * w);
#pragma unroll
                for (uint32_t jj = 0; jj < 4u; jj++) {
                    float kk[4];
                    h4_f32(kk, *(const uint2 *)(Ks + (uint64_t)(tj + 4u * jj) * d + c0 + 4u * w));
#pragma unroll
                    for (uint32_t x = 0; x < 4u; x++) {
                        acc[jj] = __fmaf_rn(f4_at(q4, x), kk[x], acc[jj]);
                        if (CERT) aab[jj] = __fmaf_ru(fabsf(f4_at(q4, x)), fabsf(kk[x]), aab[jj]);
                    }
                }
            }
        }
        /* token sums over the 8 lanes: lane keeps token t = tj + 4 (cg >> 1) */
        rs_level<2u, 4u, false>(acc, lane);
        rs_level<1u, 2u, false>(acc, lane);
        if (CERT) {
            rs_level<2u, 4u, true>(aab, lane);
            rs_level<1u, 2u, true>(aab, lane);
        }
        acc[0] = __fadd_rn(acc[0], __shfl_xor_sync(0xffffffffu, acc[0], 1));
        if (CERT) aab[0] = __fadd_ru(aab[0], __shfl_xor_sync(0xffffffffu, aab[0], 1));
        const uint32_t t = tj + 4u * (cg >> 1);
        const bool valid = t < ntok;
        const float s = __fmul_rn(h.scale, acc[0]);
        float mx, mn, am, l, wt[ENT_TOK];
        entry_weights(valid, s, aab[0], CERT, mx, mn, am, l, wt);
        const uint64_t at = (uint64_t)qh * ws.ent + b;
        for (uint32_t c = 4u * lane; c < d; c += 128u) {
            float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (uint32_t i = 0; i < ENT_TOK; i++) {
                if (i >= ntok) break;
                float va[4];
                if (ov) {
                    h4_f32(va, *(const uint2 *)(Vo + (uint64_t)i * d + c));
                } else {
                    const float4 x = *(const float4 *)(Vq + (uint64_t)i * d + c);
                    va[0] = x.x;
                    va[1] = x.y;
                    va[2] = x.z;
                    va[3] = x.w;
                }
                o.x = __fadd_rn(o.x, __fmul_rn(wt[i], va[0]));
                o.y = __fadd_rn(o.y, __fmul_rn(wt[i], va[1]));
                o.z = __fadd_rn(o.z, __fmul_rn(wt[i], va[2]));
                o.w = __fadd_rn(o.w, __fmul_rn(wt[i], va[3]));
            }
            *(float4 *)(ws.pacc + at * d + c) = o;
        }
        if (lane == 0u) {
            ws.pm[at] = mx;
            ws.pl[at] = l;
            if (CERT) {
                ws.pmin[at] = mn;
                ws.pab[at] = am;
            }
        }
    }
}

/* Has every select CTA finished (its writes fenced before it counted)? */
static __device__ __forceinline__ bool select_done(const kvq_cuda_cert_ws &ws, uint32_t nsel)
{
    return *(volatile const uint32_t *)(ws.p2task + P2T_SELDONE) >= nsel;
}

/* Phase 2 [CERT-DEV-10].  Every CTA draws work until none is left:
 *   - early: (KV head, segment, pass of four heads) from P2T_EARLY, each
 *     segment with all its tokens into entry nb + s (with ws.overlap; the
 *     kernel does not wait for the select kernel, only for Phase 1, which the
 *     select kernel waited for before it let this kernel start), or, without
 *     it, after the select kernel with the masks;
 *   - post (once the select kernel is done, first whenever there is some):
 *     with ws.overlap, the segments in which some head of the pass selects
 *     a block, recomputed with the masks into entry nb + nseg + s (the
 *     longest items, first; from the end of ws.post); then the residual
 *     block of each KV head; then the listed blocks (from the start of
 *     ws.post: the binary16 keys from tier 2, read once for the heads that
 *     select the block).
 * Which CTA takes an item does not change its entry.  A CTA that runs out of
 * early work waits for the select kernel: its CTAs are all resident (each
 * let this kernel start), so the wait ends. */
template <bool CERT>
__global__ void __launch_bounds__(P2P_THREADS, 4)
cert_phase2p_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws)
{
    extern __shared__ __align__(16) uint8_t p2p_dyn[];
    __shared__ uint32_t task, ready, npost, nrec, left_e, left_p;
    const uint32_t qheads = h.kv_heads * h.group;
    if (!ws.overlap) cudaGridDependencySynchronize();      /* the select kernel is done */
    const kvq_cert_shape sh = h.shape;
    const uint32_t nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t npass = (h.group + 3u) / 4u;
    const uint32_t all = h.group >= 32u ? ~0u : (1u << h.group) - 1u;
    const uint32_t nres = nb > nq ? h.kv_heads : 0u;        /* residual items */
    const uint32_t per = ws.nseg * npass, ntask = h.kv_heads * per;
    const uint32_t NONE = ~0u, POST = 0x80000000u;
    if (threadIdx.x == 0u) {
        ready = 0u;
        left_e = 1u;
        left_p = 1u;
        npost = 0u;
        nrec = 0u;
    }
    for (;;) {
        __syncthreads();                                   /* smem and `task` free */
        if (threadIdx.x == 0u) {
            uint32_t t = NONE;
            for (int pass = 0; pass < 2 && t == NONE; pass++) {
                if (!ready && (pass == 1 || !left_e) && left_p) {
                    while (!select_done(ws, qheads)) __nanosleep(256);
                }
                if (!ready && select_done(ws, qheads)) {
                    __threadfence();
                    ready = 1u;
                    npost = __ldcg(ws.p2task + P2T_NPOST);
                    nrec = __ldcg(ws.p2task + P2T_NREC);
                }
                if (ready && left_p) {
                    const uint32_t u = atomicAdd(ws.p2task + P2T_POST, 1u);
                    if (u < nrec + nres + npost) t = POST | u;
                    else left_p = 0u;
                }
                if (t == NONE && left_e) {
                    const uint32_t u = atomicAdd(ws.p2task + P2T_EARLY, 1u);
                    if (u < ntask) t = u;
                    else left_e = 0u;
                }
                if (!left_p) break;
            }
            task = t;
        }
        __syncthreads();
        const uint32_t i = task;
        if (i == NONE) break;
        if (!(i & POST)) {                                 /* early: a segment */
            const uint32_t kv = i / per, r = i % per, seg = r / npass, g0 = 4u * (r % npass);
            p2p_segment<CERT>(h, ws, kv, g0, seg, ws.overlap == 0u, nb + seg, *(seg_smem *)p2p_dyn);
            continue;
        }
        /* the segments to recompute first (the longest items), then the
         * residual blocks and the listed blocks */
        const uint32_t u = i & ~POST;
        uint32_t x;
        if (u < nrec) {
            x = __ldcg(ws.post + (P2Q_CAP(ws) - 1u - u));
        } else if (u - nrec < nres) {                      /* the residual block of KV head u - nrec */
            p2p_special<CERT>(h, ws, u - nrec, nq, all, all, p2p_dyn);
            continue;
        } else {
            x = __ldcg(ws.post + (u - nrec - nres));
        }
        if (x & P2Q_REC) {                                 /* a segment again, with the masks */
            const uint32_t y = x & ~P2Q_REC, kv = y / per, r = y % per;
            const uint32_t seg = r / npass, g0 = 4u * (r % npass);
            p2p_segment<CERT>(h, ws, kv, g0, seg, true, nb + ws.nseg + seg, *(seg_smem *)p2p_dyn);
        } else {                                           /* a listed block */
            const uint32_t kv = x / nb, b = x % nb;
            p2p_special<CERT>(h, ws, kv, b, __ldcg(ws.selm + (uint64_t)kv * nb + b),
                              __ldcg(ws.promm + (uint64_t)kv * nb + b), p2p_dyn);
        }
    }
    /* the last CTA out clears the counters for the next step (every CTA has
     * seen the select kernel done, so its counts are in); the combine kernel
     * may be placed as CTAs retire */
    if (threadIdx.x == 0u && atomicAdd(ws.p2task + P2T_DONE, 1u) + 1u == gridDim.x) {
        for (uint32_t k = 0; k < P2T_WORDS; k++) ws.p2task[k] = 0u;
    }
    cudaTriggerProgrammaticLaunchCompletion();
}

/* The combine, one CTA a query head, a programmatic dependent of Phase 2
 * (every entry is written when it starts). */
template <bool CERT>
__global__ void __launch_bounds__(P2P_THREADS)
cert_combine_p_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, float *d_out,
                      kvq_cert_record *d_rec, kvq_cert_decl *d_decl, float *d_delta1,
                      uint32_t *d_status, float eps_dense)
{
    __shared__ cmb_smem C;
    cudaGridDependencySynchronize();
    p2p_combine<CERT>(h, ws, blockIdx.x, C, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense);
}

/* ---- host side ----------------------------------------------------------- */

size_t cert_phase2p_smem(uint32_t d)
{
    size_t b = sizeof(seg_smem);
    if (spc_bytes(d) > b) b = spc_bytes(d);
    return b;
}

/* dynamic shared memory beyond the default 48 KiB (the special CTAs of d =
 * 512), and the largest shared-memory carveout, so that four segment CTAs (40
 * KiB each) share a multiprocessor */
cudaError_t cert_phase2p_attrs(void)
{
    const int mx = (int)cert_phase2p_smem(KVQ_CERT_MAX_DIM);
    cudaError_t e = cudaSuccess;
    for (int c = 0; c < 2 && e == cudaSuccess; c++) {
        const void *k = c ? (const void *)cert_phase2p_kernel<true> : (const void *)cert_phase2p_kernel<false>;
        e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     (int)cudaSharedmemCarveoutMaxShared);
    }
    return e;
}

/* Phase 2, a programmatic dependent of the select kernel (grid: P2P_SPC CTAs
 * a KV head, and as many more as the device holds at once; all of them take
 * segments from the counter), then the combine, one CTA a query head, a
 * programmatic dependent of Phase 2. */
cudaError_t cert_phase2p_launch(bool cert, cudaStream_t stream, const kvq_cuda_cert_heads &h,
                                const kvq_cuda_cert_ws &w, float *d_out, kvq_cert_record *d_rec,
                                kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                                float eps_dense)
{
    const size_t sm = cert_phase2p_smem(h.shape.dim);
    int per_sm = 0;
    cudaError_t e = cert ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cert_phase2p_kernel<true>,
                                                                         (int)P2P_THREADS, sm)
                         : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cert_phase2p_kernel<false>,
                                                                         (int)P2P_THREADS, sm);
    if (e != cudaSuccess) return e;
    /* as many CTAs as the device holds at once, at most one an item */
    const uint32_t items = h.kv_heads * (w.nseg * ((h.group + 3u) / 4u) + P2P_SPC);
    uint32_t ctas = per_sm > 0 ? (uint32_t)per_sm * w.sms : w.sms;
    if (ctas > items) ctas = items;
    const dim3 g(ctas);
    e = cert ? launch_dep(cert_phase2p_kernel<true>, g, dim3(P2P_THREADS), sm, stream, h, w)
             : launch_dep(cert_phase2p_kernel<false>, g, dim3(P2P_THREADS), sm, stream, h, w);
    if (e != cudaSuccess) return e;
    const dim3 gq(h.kv_heads * h.group);
    return cert ? launch_dep(cert_combine_p_kernel<true>, gq, dim3(P2P_THREADS), (size_t)0, stream, h,
                             w, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense)
                : launch_dep(cert_combine_p_kernel<false>, gq, dim3(P2P_THREADS), (size_t)0, stream, h,
                             w, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense);
}
