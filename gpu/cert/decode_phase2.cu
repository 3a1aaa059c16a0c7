/*
 * decode_phase2.cu -- Phase 2 of the certified CERT decode step on CUDA
 * (cert_phase2_kernel; decode_common.cuh says how the step is split): the
 * selected entries' scores, softmax and INT4 values [CERT-V4-02], and the
 * combine by each head's last CTA: the output, E_arith [CERT-AR-01], the
 * record; and its launch.
 */
#include "decode_common.cuh"

#ifdef KVQ_CERT_TIMELINE
__device__ unsigned long long tl_p2[TL_P2CTAS][TL_P2_N];
#endif

/* ---- combine, E_arith, record -------------------------------------------
 * Run by the last Phase-2 CTA of a query head to finish (the other CTAs'
 * entries are visible to it: each thread fenced its writes before the CTA
 * took its ticket); loads of Phase 2's results bypass L1. */
struct cb_smem {
    float alpha[1024];
    float prod[1024];                /* RN(l_e alpha_e) */
    float red[P2_THREADS / 32u][3];
    float lsum;
};

template <bool CERT>
__device__ void combine_head(const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &ws,
                             uint32_t qh, cb_smem &C, float *d_out, kvq_cert_record *d_rec,
                             kvq_cert_decl *d_decl, float *d_delta1, uint32_t *d_status,
                             float eps_dense)
{
    float *alpha_s = C.alpha, *prod_s = C.prod;
    float (*red)[3] = C.red;
    float &lsum = C.lsum;
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nb = kvq_cert_blocks(&sh);
    const head_info I = ws.info[qh];
    const uint32_t nent = I.nent;
    const uint64_t p0 = (uint64_t)qh * nb;
    /* M = max_e m_e (= the greatest attended score), min score, max A_e; the
     * first 1024 m_e and l_e are kept for the rescaling */
    float M = -INFINITY, smin = INFINITY, amax = 0.0f;
    for (uint32_t e = tid; e < nent; e += blockDim.x) {
        const float pm = __ldcg(ws.pm + p0 + e);
        if (e < 1024u) {
            alpha_s[e] = pm;
            prod_s[e] = __ldcg(ws.pl + p0 + e);
        }
        M = fmaxf(M, pm);
        if (CERT) {
            smin = fminf(smin, __ldcg(ws.pmin + p0 + e));
            amax = fmaxf(amax, __ldcg(ws.pab + p0 + e));
        }
    }
    M = warp_max(M);
    for (int o = 16; o > 0; o >>= 1) {
        smin = fminf(smin, __shfl_xor_sync(0xffffffffu, smin, o));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    }
    if (lane == 0u) {
        red[warp][0] = M;
        red[warp][1] = smin;
        red[warp][2] = amax;
    }
    __syncthreads();
    for (uint32_t w = 0; w < P2_THREADS / 32u; w++) {
        M = fmaxf(M, red[w][0]);
        smin = fminf(smin, red[w][1]);
        amax = fmaxf(amax, red[w][2]);
    }
    /* alpha_e = expf(RN(m_e - M)): one rescaling a token (Nr = 1); l and acc
     * by recursive summation over the entries in list order (the products
     * RN(l_e alpha_e) formed in parallel, the sums in order); a thread keeps
     * its channels' sums in registers */
    float a[KVQ_CERT_MAX_DIM / P2_THREADS];
#pragma unroll
    for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) a[k] = 0.0f;
    for (uint32_t base = 0; base < nent; base += 1024u) {
        const uint32_t top = min(nent, base + 1024u);
        __syncthreads();
        for (uint32_t e = base + tid; e < top; e += blockDim.x) {
            /* base 0: this thread kept m_e and l_e above (same e, same thread) */
            const float pm = base == 0u ? alpha_s[e] : __ldcg(ws.pm + p0 + e);
            const float pl = base == 0u ? prod_s[e] : __ldcg(ws.pl + p0 + e);
            const float al = expf(__fsub_rn(pm, M));
            alpha_s[e - base] = al;
            prod_s[e - base] = __fmul_rn(pl, al);
        }
        __syncthreads();
        if (tid == 0) {
            float l = base == 0 ? 0.0f : lsum;
            for (uint32_t e = base; e < top; e++) l = __fadd_rn(l, prod_s[e - base]);
            lsum = l;
        }
#pragma unroll
        for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) {
            const uint32_t c = tid + k * P2_THREADS;
            if (c >= d) break;
            const float *pa = ws.pacc + p0 * d + c;
            float x = a[k];
            /* sixteen entries' loads in flight, then their sums in order */
            for (uint32_t e0 = base; e0 < top; e0 += 16u) {
                float v[16];
#pragma unroll
                for (uint32_t i = 0; i < 16u; i++)
                    v[i] = e0 + i < top ? __ldcg(pa + (uint64_t)(e0 + i) * d) : 0.0f;
#pragma unroll
                for (uint32_t i = 0; i < 16u; i++)
                    if (e0 + i < top) x = __fadd_rn(x, __fmul_rn(v[i], alpha_s[e0 + i - base]));
            }
            a[k] = x;
        }
    }
    __syncthreads();
    const float l = lsum;
#pragma unroll
    for (uint32_t k = 0; k < KVQ_CERT_MAX_DIM / P2_THREADS; k++) {
        const uint32_t c = tid + k * P2_THREADS;
        if (c < d) d_out[(uint64_t)qh * d + c] = __fdiv_rn(a[k], l);
    }
    if (tid != 0) return;
    /* declaration [CERT-DEV-05]: a token's term meets its product, <= 15
     * additions inside its entry, one rescaling, <= nent - 1 additions of the
     * combine: D = ENT_TOK + nent + 1 (one spare), Nr = 1, U_exp = 2 */
    finish_head<CERT>(I, sh, ws, qh, h.scale, M, smin, amax, ENT_TOK + nent + 1u, nent, eps_dense,
                      d_rec, d_decl, d_delta1, d_status);
}

/* ---- Phase 2 ---------------------------------------------------------------
 * One warp an entry of the head's list (a selected block, the residual block,
 * or at rung 3 every block), P2_CTAS CTAs of P2_WARPS warps a query head,
 * looping over the entries.  Scores as Phase 1 (lane L = 8 tj + cg: tokens
 * tj + 4 j, channels 128 m + 16 cg + 0..15; fmaf chains over the lane's
 * channels, three levels over the 8 lanes of a token, one rounding for the
 * scale: at most d + 1 roundings a term); keys are k^ of the codes, or the
 * binary16 originals (residual block, and tier 2 at rung 3).  The entry's
 * max m_e, weights w_t = expf(RN(s_t - m_e)), their sum l_e by a 4-level
 * tree, and acc_e[c] = sum_t RN(w_t v~_tc) in token order (no fmaf): a term
 * meets at most 16 roundings in its entry; the combine rescales each entry
 * once.  Values: lane L holds channels 4 L + 128 r; INT4 codes dequantized
 * in registers v^ = fmaf(code, s, zv) [CERT-V4-02], originals from tier 2
 * for promoted blocks and rung 3, from the device copy for the residual
 * block.  A_e, the bound of sum_c |q_c||k_c| for E_arith, is Phase 1's A_b,
 * except at rung 3, where it is summed upward here from the originals.
 * SPEC: [CERT-AR-01] [CERT-V4-02] [CERT-DEV-05] [CERT-DEV-06] */
template <bool CERT>
__global__ void __launch_bounds__(P2_THREADS)
cert_phase2_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, float *d_out,
                   kvq_cert_record *d_rec, kvq_cert_decl *d_decl, float *d_delta1,
                   uint32_t *d_status, float eps_dense)
{
    __shared__ cb_smem C;
    __shared__ uint32_t last;
    TL_P2(0);
    const uint32_t qh = blockIdx.y, kv = qh / h.group;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t cg = lane & 7u, tj = lane >> 3;
    const kvq_cert_shape sh = h.shape;
    const uint32_t d = sh.dim, nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const uint32_t nres = kvq_cert_residual_tokens(&sh), mc = (d + 127u) / 128u;
    const float *q = h.d_q + (uint64_t)qh * d;
    /* the query's first 128 channels (lane: 16 cg .. 16 cg + 15), read before
     * the wait: q is an input of the step, complete before Phase 1 began */
    float q0[16];
#pragma unroll
    for (uint32_t w = 0; w < 4u; w++) {
        const float4 x = 16u * cg < d ? *(const float4 *)(q + 16u * cg + 4u * w)
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        q0[4u * w] = x.x;
        q0[4u * w + 1u] = x.y;
        q0[4u * w + 2u] = x.z;
        q0[4u * w + 3u] = x.w;
    }
    cudaGridDependencySynchronize();                       /* the select kernel is done */
    TL_P2(1);
    const uint32_t *list = ws.list + (uint64_t)qh * nb;
    const uint32_t ei0 = blockIdx.x * P2_WARPS + warp;
    /* the warp's first list entry is read with the count (an entry past the
     * count is never used) */
    const uint32_t nent = ws.info[qh].nent;
    uint32_t e_nx = ei0 < nb ? list[ei0] : 0u;
    const int8_t *kc = h.d_kcodes + (uint64_t)kv * kvq_cert_key_code_bytes(&sh);
    const float *sg = h.d_sigma + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const float *zz = h.d_z + (uint64_t)kv * kvq_cert_key_meta_count(&sh);
    const uint8_t *vc = h.d_vcodes + (uint64_t)kv * kvq_cert_value_code_bytes(&sh);
    const float *vs = h.d_vscale + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const float *vz = h.d_vzero + (uint64_t)kv * kvq_cert_value_groups(&sh);
    const uint16_t *kr = h.d_kres + (uint64_t)kv * nres * d;
    const uint16_t *vr = h.d_vres + (uint64_t)kv * nres * d;
    const uint16_t *tk = h.t2_k + (uint64_t)kv * sh.tokens * d;
    const uint16_t *tv = h.t2_v + (uint64_t)kv * sh.tokens * d;
    const uint32_t stride = gridDim.x * P2_WARPS;
    for (uint32_t ei = ei0; ei < nent; ei += stride) {
        const uint32_t e = e_nx, b = e & ENT_BLOCK;
        if (ei + stride < nent) e_nx = list[ei + stride];
        const bool res = (e & ENT_RES) != 0u, dense = (e & ENT_DENSE) != 0u;
        const bool orig_v = res || (e & (ENT_DENSE | ENT_PROM)) != 0u;
        const uint32_t ntok = res ? nres : KVQ_CERT_BLOCK;
        const uint32_t tok0 = kvq_cert_block_first(b);
        /* original values: token i at vo + i d (the residual's device copy,
         * the pool slot of a staged promoted block, else tier 2) */
        const uint16_t *vo = res ? vr : tv + kvq_cert_in_index(&sh, tok0, 0);
        if (!res && !dense && (e & ENT_PROM)) {
            const uint32_t st = ws.stag[(uint64_t)kv * nb + b];
            if (st >= 2u)
                vo = ws.stage + ((uint64_t)kv * h.group * ws.stage_cap + st - 2u) *
                                    KVQ_CERT_BLOCK * d;
        }
        /* scores */
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, aab[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint32_t m = 0; m < mc; m++) {
            const uint32_t c0 = 128u * m + 16u * cg;
            if (c0 >= d) break;
            float qv[16];
#pragma unroll
            for (uint32_t w = 0; w < 4u; w++) {
                const float4 x = m == 0u ? make_float4(q0[4u * w], q0[4u * w + 1u], q0[4u * w + 2u],
                                                       q0[4u * w + 3u])
                                         : *(const float4 *)(q + c0 + 4u * w);
                qv[4u * w] = x.x;
                qv[4u * w + 1u] = x.y;
                qv[4u * w + 2u] = x.z;
                qv[4u * w + 3u] = x.w;
            }
            if (!res && !dense) {
                uint4 cw[4];
                float4 s4[4], z4[4];
                const int8_t *kb = kc + kvq_cert_key_block_offset(&sh, b);
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++)
                    cw[j] = *(const uint4 *)(kb + kvq_cert_key_code_index(d, tj + 4u * j, c0));
                const float4 *sp = (const float4 *)(sg + kvq_cert_key_meta_index(&sh, b, c0));
                const float4 *zp = (const float4 *)(zz + kvq_cert_key_meta_index(&sh, b, c0));
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++) {
                    s4[w] = sp[w];
                    z4[w] = zp[w];
                }
#pragma unroll
                for (uint32_t w = 0; w < 4u; w++)
#pragma unroll
                    for (uint32_t j = 0; j < 4u; j++) {
                        const uint32_t wx = u4_at(cw[j], w) ^ 0x80808080u;
#pragma unroll
                        for (uint32_t x = 0; x < 4u; x++) {
                            const float kk = __fmaf_rn(code_f32(wx, x), f4_at(s4[w], x),
                                                       f4_at(z4[w], x));   /* [CERT-K8-03] */
                            acc[j] = __fmaf_rn(qv[4u * w + x], kk, acc[j]);
                        }
                    }
            } else {
                uint2 hw[4][4];
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++) {
                    const uint32_t i = tj + 4u * j;
#pragma unroll
                    for (uint32_t w = 0; w < 4u; w++) {
                        const uint16_t *src = res ? kr + (uint64_t)i * d
                                                  : tk + kvq_cert_in_index(&sh, tok0 + i, 0);
                        hw[j][w] = i < ntok ? *(const uint2 *)(src + c0 + 4u * w)
                                            : make_uint2(0u, 0u);
                    }
                }
#pragma unroll
                for (uint32_t j = 0; j < 4u; j++)
#pragma unroll
                    for (uint32_t w = 0; w < 4u; w++) {
                        float kk[4];
                        h4_f32(kk, hw[j][w]);
#pragma unroll
                        for (uint32_t x = 0; x < 4u; x++) {
                            acc[j] = __fmaf_rn(qv[4u * w + x], kk[x], acc[j]);
                            if (CERT && dense)
                                aab[j] = __fmaf_ru(fabsf(qv[4u * w + x]), fabsf(kk[x]), aab[j]);
                        }
                    }
            }
        }
        /* token sums over the 8 lanes: lane keeps token t = tj + 4 (cg >> 1) */
        rs_level<2u, 4u, false>(acc, lane);
        rs_level<1u, 2u, false>(acc, lane);
        if (CERT && dense) {
            rs_level<2u, 4u, true>(aab, lane);
            rs_level<1u, 2u, true>(aab, lane);
        }
        acc[0] = __fadd_rn(acc[0], __shfl_xor_sync(0xffffffffu, acc[0], 1));
        if (CERT && dense) aab[0] = __fadd_ru(aab[0], __shfl_xor_sync(0xffffffffu, aab[0], 1));
        const uint32_t t = tj + 4u * (cg >> 1);
        const bool valid = t < ntok;
        const float s = __fmul_rn(h.scale, acc[0]);
        float mx, mn, am, l, wt[ENT_TOK];
        entry_weights(valid, s, aab[0], CERT && dense, mx, mn, am, l, wt);
        const uint64_t at = (uint64_t)qh * nb + ei;
        for (uint32_t c = 4u * lane; c < d; c += 128u) {
            float va[ENT_TOK][4];
            uint32_t el;
            const uint32_t j = kvq_cert_value_group_of(c, &el);
            const uint32_t first = kvq_code_byte(el, KVQ_CERT_VBITS);
            /* every token's loads are issued before any is used (one round
             * trip for the entry, not one a token); tokens past ntok are 0 */
            if (orig_v) {
                uint2 raw[ENT_TOK];
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++)
                    raw[i] = i < ntok ? *(const uint2 *)(vo + (uint64_t)i * d + c) : make_uint2(0u, 0u);
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++) h4_f32(va[i], raw[i]);
            } else {
                uint32_t word[ENT_TOK];
                float sc[ENT_TOK], zv[ENT_TOK];
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++) {
                    word[i] = 0u;
                    sc[i] = zv[i] = 0.0f;
                    if (i < ntok) {
                        const uint32_t tok = tok0 + i;
                        const uint64_t gi = kvq_cert_value_group(&sh, tok, j);
                        word[i] = *(const uint16_t *)(vc + kvq_cert_value_code_offset(&sh, tok, j) + first);
                        sc[i] = vs[gi];
                        zv[i] = vz[gi];
                    }
                }
#pragma unroll
                for (uint32_t i = 0; i < ENT_TOK; i++)
#pragma unroll
                    for (uint32_t x = 0; x < 4u; x++) {
                        const uint32_t code = (word[i] >> kvq_code_word_shift(el + x, KVQ_CERT_VBITS, first)) &
                                              kvq_code_max(KVQ_CERT_VBITS);
                        va[i][x] = i < ntok ? __fmaf_rn((float)code, sc[i], zv[i]) : 0.0f;   /* [CERT-V4-02] */
                    }
            }
            float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (uint32_t i = 0; i < ENT_TOK; i++) {
                if (i >= ntok) continue;
                o.x = __fadd_rn(o.x, __fmul_rn(wt[i], va[i][0]));
                o.y = __fadd_rn(o.y, __fmul_rn(wt[i], va[i][1]));
                o.z = __fadd_rn(o.z, __fmul_rn(wt[i], va[i][2]));
                o.w = __fadd_rn(o.w, __fmul_rn(wt[i], va[i][3]));
            }
            *(float4 *)(ws.pacc + at * d + c) = o;
        }
        if (lane == 0u) {
            ws.pm[at] = mx;
            ws.pl[at] = l;
            if (CERT) {
                ws.pmin[at] = mn;
                ws.pab[at] = dense ? am : ws.ab[(uint64_t)qh * nb + b];
            }
        }
    }
    /* the head's last CTA to finish combines (and clears the ticket for the
     * next step) */
    TL_P2(2);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0u) {
        last = atomicAdd(ws.p2cnt + qh, 1u) == gridDim.x - 1u ? 1u : 0u;
        if (last) ws.p2cnt[qh] = 0u;
    }
    __syncthreads();
    TL_P2(3);
    if (last) {
        __threadfence();
        combine_head<CERT>(h, ws, qh, C, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense);
        TL_P2(4);
    }
}

/* ---- host side ----------------------------------------------------------- */

/* A programmatic dependent of the select kernel (it waits for it after
 * reading q). */
cudaError_t cert_phase2_launch(bool cert, dim3 g2, cudaStream_t stream,
                               const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &w,
                               float *d_out, kvq_cert_record *d_rec, kvq_cert_decl *d_decl,
                               float *d_delta1, uint32_t *d_status, float eps_dense)
{
    return cert ? launch_dep(cert_phase2_kernel<true>, g2, dim3(P2_THREADS), (size_t)0, stream, h,
                             w, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense)
                : launch_dep(cert_phase2_kernel<false>, g2, dim3(P2_THREADS), (size_t)0, stream, h,
                             w, d_out, d_rec, d_decl, d_delta1, d_status, eps_dense);
}

#ifdef KVQ_CERT_TIMELINE
cudaError_t cert_phase2_tl(unsigned long long *out, const unsigned long long *in)
{
    cudaError_t e = cudaSuccess;
    if (out != NULL) e = cudaMemcpyFromSymbol(out, tl_p2, sizeof tl_p2);
    if (e == cudaSuccess && in != NULL) e = cudaMemcpyToSymbol(tl_p2, in, sizeof tl_p2);
    return e;
}
#endif
