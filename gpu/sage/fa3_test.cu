/*
 * fa3_test.cu -- the FlashAttention-3-structured SAGE core (gpu/sage/sage_fa3.cu)
 * judged bit for bit against the warpgroup core (gpu/sage/sage_attn.cu), and the
 * two timed side by side (spec/sage.md [SAGE-DEV-12]).
 *
 * SPEC: [SAGE-DEV-12] [SAGE-ATT-10] [SAGE-DEV-15]
 *
 * The check: random core inputs made on the device (INT8 Q/K codes uniform in
 * -127..127 or the extremes -128, -127, 127; E4M3 V codes, any finite code;
 * positive Q/K/V scales over several binades; signed dS of a case's spread),
 * shapes with partial query and key blocks, nq above and below nk, causal or
 * not, the three buffer policies, 1 to 3 heads; every output of
 * kvq_cuda_sage_attn_core_fa3 against kvq_cuda_sage_attn_core_loop bit for bit
 * (both outputs pre-filled with different NaN patterns, so an unwritten output
 * differs), and the default core (kvq_cuda_sage_attn_core) against the FA3 one.
 * The pinned sequence is the same in both cores -- the exact int32 dots, the
 * same fmaf score, ex2.approx.ftz, l's block sum in the same lane order and
 * butterfly, the same 32 products in each FP8 wgmma, the same flushes -- so
 * every output bit must agree; nothing is judged by a bound here.  Then the
 * whole pipeline (kvq_cuda_sage_attn) on binary32 inputs, with
 * KVQ_SAGE_CORE=loop and with the default core: output and result word equal.
 * qk_bits 4: the FA3 core refuses (KVQ_E_PARAM) and the default core is the
 * warpgroup one; checked as such.
 *
 * The check runs on every form and level of the FA3 core ([SAGE-DEV-13]): the
 * serial form (KVQ_SAGE_FA3_SERIAL=1: each warpgroup's QK, softmax and P~V in
 * turn; its highest level, 2) and the ping-pong form at levels 0 (the first
 * form: I2F, every rescale), 1 (the int32 score without I2F), 2 (and the
 * rescale skipped by a warp vote), 3 (and the in-warpgroup overlap) and 4 (and
 * the leaner per-block stream: one K-scale product a row and block, dS by 16-byte
 * loads, the flush branched around, the rescale's vote by row, the row maxima as
 * four chains) and 5 (and level 4's fixed per-block cost off the loop: the
 * warpgroup index uniform, the flush's skip by a warp vote, the steady step
 * without the release and last-turn tests), chosen by KVQ_SAGE_FA3_LEVEL (unset:
 * 6 given V~, 3 not); a level outside 0..6 must be refused (KVQ_E_PARAM, the output untouched).  Before it,
 * i2f_exact (the conversion of levels 1..4) against __int2float_rn on the
 * device for every int32 in [-2^22, 2^22], and its first failures just outside
 * the range, and level 4's precondition on K's scale map
 * (kvq_sage_fa3_k_uniform) on maps that have it and maps that do not.  A
 * planted build (kvq_sage_fa3_test_plant: sage_fa3.cu with
 * KVQ_SAGE_FA3_PLANT: at levels 0..3 the buffer flush after block 0 skipped,
 * at level 4 the block's K scale of lane t taken from lane t + 1's slot, at
 * level 5 the flush's vote by all in place of any, at level 6 block kb + 1's dS
 * fetched ahead stored in block kb's place) must
 * fail the check in every form (--plant: exit 0 only when it does).
 *
 * The timing (--time): 32 heads, d = 128, N = nq = nk in --sizes, causal and
 * not, buffer 128; medians of --reps launches of the warpgroup core, the
 * serial form, the four levels of the ping-pong form and a device-to-device
 * copy of the core's input bytes, side by side, in one run (the outputs
 * compared bit for bit again).
 * --profile N: one launch of the ping-pong form at each level 0..4 at N, in
 * that order (for ncu), nothing judged.  --profile-vt N: one launch of level 3,
 * then one of level 3 given V~ (for ncu).  --profile-34 N: one launch of level 3
 * given V~, one of level 4 given V~, then one of level 3 and one of level 4
 * transposing V's codes (for ncu).  --profile-45 N: the same with levels 4 and 5;
 * --profile-56 N: with levels 5 and 6.
 *
 * --time-only: the timing without the check before it.  --forms: the forms checked and
 * timed, by key: s (serial), 0..6 (ping-pong levels), 3v, 4v, 5v and 6v (levels 3,
 * 4, 5 and 6 given V~, timed only); all by default.  The timing line gives level 4 against
 * level 3 (time of L3 / time of L4), level 5 against level 4 (time of L4 / time
 * of L5) and level 6 against level 5 (time of L5 / time of L6) when both are timed,
 * with and without V~.
 *
 * V~ ([SAGE-DEV-15]: V's codes in the FA3 core's B-operand layout, written by
 * the pipeline's V quantizer): every core check above also runs
 * kvq_cuda_sage_attn_core_fa3_vt given V~ made here from the plain codes by the
 * spec's formula (gpu/sage/vt_ref.h; the default form loads it, the others transpose
 * the plain codes) against the warpgroup core; then the pipeline's own V~ is
 * checked byte for byte against its plain codes permuted by the same formula,
 * and its output against KVQ_SAGE_VT=0 and the warpgroup core (check_vt).  The
 * planted build links sage.cu with KVQ_SAGE_PLANT=3 (two quarters of each V~
 * tile swapped) as well: with --plant the V~ check must fail too.
 * --pipe (with --time or --time-only): the whole pipeline with and without V~
 * side by side (kvq_cuda_sage_attn_stages: the V quantizer's and the core's
 * times) and a copy of V's bytes, at --sizes, causal and not, 32 heads.
 *
 * usage: kvq_sage_fa3_test [--plant] [--time | --time-only] [--forms s,0,1,2,3,3v,4,4v,5,5v,6,6v]
 *                          [--sizes N,N,..] [--reps R] [--pipe] [--profile N] [--profile-vt N]
 *                          [--profile-34 N] [--profile-45 N] [--profile-56 N] [--commit TEXT]
 * Exit status: 0 when every check passes (with --plant: when the check FAILS);
 * 1 otherwise; 2 on a usage or CUDA error; 77 without an sm_90 device or
 * without the FA3 core built (SKIPPED, not a pass).
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_sage_attn.h"
#include "kvq_cuda.h"
#include "sage/sage_instr.cuh"
#include "sage/sage_fa3.h"
#include "sage/vt_ref.h"

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "fa3-test: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,    \
                    cudaGetErrorString(e_));                                        \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

#define D 128u

__device__ __forceinline__ uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* kind 0: INT8 codes (ext: -128, -127, 127 only), 1: E4M3 codes (no NaN),
 * 2: positive floats 2^lo .. 2^hi, 3: signed floats, magnitude < 2^hi,
 * 4: binary32 Gaussian-like (sum of uniforms) times 2^hi */
__global__ void fill_kernel(void *p, uint64_t n, uint64_t seed, int kind, int ext, int lo, int hi)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = mix(seed * 0x9E3779B97F4A7C15ull + i + 1u);
        if (kind == 0) {
            int v = (int)(r % 255u) - 127;
            if (ext) v = (r & 3u) == 0u ? -128 : (r & 3u) == 1u ? -127 : 127;
            ((int8_t *)p)[i] = (int8_t)v;
        } else if (kind == 1) {
            uint8_t b = (uint8_t)r;
            if ((b & 0x7Fu) == 0x7Fu) b ^= 1u;
            ((uint8_t *)p)[i] = b;
        } else if (kind == 2) {
            const int e = lo + (int)((r >> 32) % (uint64_t)(hi - lo + 1));
            ((float *)p)[i] = ldexpf(1.0f + (float)(r & 0xFFFFFFu) * 0x1p-24f, e);
        } else if (kind == 3) {
            const float u = (float)(r & 0xFFFFFFu) * 0x1p-24f;
            ((float *)p)[i] = ((r >> 40) & 1u ? -1.0f : 1.0f) * ldexpf(u, hi);
        } else {
            const float u = (float)(r & 0xFFFFu) + (float)((r >> 16) & 0xFFFFu) + (float)((r >> 32) & 0xFFFFu) -
                            1.5f * 65536.0f;
            ((float *)p)[i] = ldexpf(u * 0x1p-15f, hi);
        }
    }
}

/* i2f_exact against __int2float_rn for x = lo .. hi; bad[0] counts the
 * differences, bad[1] the first x that differs (its low 32 bits) */
__global__ void i2f_kernel(int64_t lo, int64_t hi, unsigned long long *bad)
{
    for (int64_t x = lo + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x <= hi;
         x += (int64_t)gridDim.x * blockDim.x)
        if (__float_as_uint(i2f_exact((int32_t)x)) != __float_as_uint(__int2float_rn((int32_t)x))) {
            atomicAdd(&bad[0], 1ull);
            atomicMin(&bad[1], (unsigned long long)(x + ((int64_t)1 << 40)));
        }
}

static int check_i2f(void)
{
    unsigned long long *d, h[2];
    CK(cudaMalloc(&d, sizeof h));
    struct { int64_t lo, hi; uint64_t want; int64_t first; } R[] = {
        {-((int64_t)1 << 22), (int64_t)1 << 22, 0u, 0},              /* the range: every value the same bits */
        {((int64_t)1 << 22) + 1, ((int64_t)1 << 22) + 1, 1u, ((int64_t)1 << 22) + 1},   /* just past it: */
        {-((int64_t)1 << 22) - 1, -((int64_t)1 << 22) - 1, 1u, -((int64_t)1 << 22) - 1}, /* the check can fail */
    };
    int fails = 0;
    for (auto &r : R) {
        h[0] = 0u, h[1] = ~0ull;
        CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        i2f_kernel<<<1024, 256>>>(r.lo, r.hi, d);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        const int ok = h[0] == r.want && (r.want == 0u || (int64_t)h[1] - ((int64_t)1 << 40) == r.first);
        printf("fa3-test i2f: x in [%lld, %lld]: i2f_exact and __int2float_rn differ on %llu (%llu expected): %s\n",
               (long long)r.lo, (long long)r.hi, h[0], (unsigned long long)r.want, ok ? "PASS" : "FAILED");
        fails += !ok;
    }
    cudaFree(d);
    return fails;
}

static void fill(void *p, uint64_t n, uint64_t seed, int kind, int ext, int lo, int hi)
{
    fill_kernel<<<1024, 256>>>(p, n, seed, kind, ext, lo, hi);
    CK(cudaGetLastError());
}

/* V~ of `heads` heads from plain codes vc ([head][nk][128]); 0x00 past nk */
__global__ void vt_permute_kernel(uint8_t *vt, const uint8_t *vc, uint32_t nk, uint32_t heads)
{
    const uint64_t nkp = (uint64_t)((nk + 63u) / 64u) * 64u, n = (uint64_t)heads * nkp * D;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t h = (uint32_t)(i / (nkp * D)), j = (uint32_t)(i / D % nkp), c = (uint32_t)(i % D);
        vt[h * kvq_vt_head_bytes(nk) + kvq_vt_index(j, c)] = j < nk ? vc[((uint64_t)h * nk + j) * D + c] : 0u;
    }
}

struct core_in {
    kvq_sage_attn a;
    uint32_t heads;
    uint8_t *qc, *kc, *vc, *vt;              /* vt: V~ of vc [SAGE-DEV-15] (vt_permute_kernel) */
    float *qs, *ks, *ds, *vs;
    size_t bytes;                            /* the input bytes a launch reads at least once */
};

static void make_in(core_in &c, uint64_t seed, int ext, int dspread)
{
    const kvq_sage_attn &a = c.a;
    const uint64_t H = c.heads;
    const kvq_sage_shape qsh = {a.nq, D}, ksh = {a.nk, D};
    const kvq_sage_qk qq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_K);
    const uint64_t nqc = H * kvq_sage_code_bytes(&qsh, a.qk_bits), nkc = H * kvq_sage_code_bytes(&ksh, a.qk_bits);
    const uint64_t nqs = H * kvq_sage_scale_count(&qsh, &qq), nks = H * kvq_sage_scale_count(&ksh, &kq);
    const uint64_t nds = H * kvq_sage_mean_rows(a.nq, KVQ_SAGE_ATTN_BQ) * a.nk, nvc = H * a.nk * D;
    CK(cudaMalloc(&c.qc, nqc));
    CK(cudaMalloc(&c.kc, nkc));
    CK(cudaMalloc(&c.vc, nvc));
    CK(cudaMalloc(&c.qs, nqs * 4u));
    CK(cudaMalloc(&c.ks, nks * 4u));
    CK(cudaMalloc(&c.ds, nds * 4u));
    CK(cudaMalloc(&c.vs, H * D * 4u));
    /* INT4 codes: any byte holds two valid 4-bit codes */
    fill(c.qc, nqc, seed + 1u, a.qk_bits == 8u ? 0 : 1, ext, 0, 0);
    fill(c.kc, nkc, seed + 2u, a.qk_bits == 8u ? 0 : 1, ext, 0, 0);
    fill(c.vc, nvc, seed + 3u, 1, 0, 0, 0);
    fill(c.qs, nqs, seed + 4u, 2, 0, -9, -5);
    fill(c.ks, nks, seed + 5u, 2, 0, -9, -5);
    fill(c.ds, nds, seed + 6u, 3, 0, 0, dspread);
    fill(c.vs, H * D, seed + 7u, 2, 0, -4, 4);
    CK(cudaMalloc(&c.vt, H * kvq_vt_head_bytes(a.nk)));
    CK(cudaMemset(c.vt, 0xA5, H * kvq_vt_head_bytes(a.nk)));      /* a byte not written shows */
    vt_permute_kernel<<<1024, 256>>>(c.vt, c.vc, a.nk, c.heads);
    CK(cudaGetLastError());
    c.bytes = nqc + nkc + nvc + 4u * (nqs + nks + nds + H * D);
}

static void free_in(core_in &c)
{
    cudaFree(c.qc), cudaFree(c.kc), cudaFree(c.vc), cudaFree(c.qs), cudaFree(c.ks), cudaFree(c.ds), cudaFree(c.vs);
    cudaFree(c.vt);
}

typedef kvq_status (*core_fn)(float *, const kvq_sage_attn *, uint32_t, const uint8_t *, const float *,
                              const uint8_t *, const float *, const float *, const uint8_t *, const float *,
                              cudaStream_t);

static kvq_status run(core_fn f, float *o, const core_in &c)
{
    return f(o, &c.a, c.heads, c.qc, c.qs, c.kc, c.ks, c.ds, c.vc, c.vs, 0);
}

/* the FA3 core given V~ beside the plain codes [SAGE-DEV-15] */
static kvq_status run_vt(float *o, const core_in &c)
{
    return kvq_cuda_sage_attn_core_fa3_vt(o, &c.a, c.heads, c.qc, c.qs, c.kc, c.ks, c.ds, c.vc, c.vt, c.vs, 0);
}

/* Bitwise comparison of two outputs; the first few differences printed. */
static uint64_t compare(const float *d1, const float *d2, uint64_t n, const char *what, uint32_t nq)
{
    std::vector<uint32_t> x(n), y(n);
    CK(cudaMemcpy(x.data(), d1, n * 4u, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), d2, n * 4u, cudaMemcpyDeviceToHost));
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        if (x[i] != y[i] && bad++ < 3u) {
            float a, b;
            memcpy(&a, &x[i], 4), memcpy(&b, &y[i], 4);
            printf("  %s: head %llu row %llu channel %llu: warpgroup core %a (0x%08x), fa3 %a (0x%08x)\n", what,
                   (unsigned long long)(i / D / nq), (unsigned long long)(i / D % nq), (unsigned long long)(i % D), a,
                   x[i], b, y[i]);
        }
    return bad;
}

struct shape {
    uint32_t heads, nq, nk, causal, buffer, ext, dspread;
};

static const shape SHAPES[] = {
    {1u, 64u, 64u, 0u, 128u, 0u, 2},     {2u, 200u, 333u, 1u, 64u, 0u, 3},   {1u, 1u, 65u, 0u, 0u, 0u, 2},
    {3u, 130u, 1000u, 0u, 128u, 1u, 4},  {1u, 128u, 128u, 1u, 128u, 0u, 2},  {2u, 257u, 129u, 1u, 0u, 0u, 5},
    {1u, 1000u, 4100u, 1u, 64u, 0u, 3},  {2u, 4096u, 4096u, 0u, 128u, 0u, 4}, {1u, 513u, 2047u, 0u, 64u, 1u, 6},
    {2u, 2048u, 2048u, 1u, 128u, 0u, 7}, {1u, 63u, 4097u, 1u, 0u, 0u, 1},    {1u, 320u, 20000u, 0u, 128u, 0u, 3},
};

static int check_cores(bool plant, const char *form)
{
    uint64_t bad = 0, total = 0;
    int fails = 0;
    for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
        const shape &s = SHAPES[si];
        core_in c;
        memset(&c, 0, sizeof c);
        c.a.nq = s.nq, c.a.nk = s.nk, c.a.dim = D, c.a.tau = 1.0f / sqrtf((float)D), c.a.causal = s.causal;
        c.a.buffer = s.buffer, c.a.qk_bits = 8u, c.heads = s.heads;
        make_in(c, 0x6b76712d66613300ull + 16u * si, (int)s.ext, (int)s.dspread);
        const uint64_t n = (uint64_t)s.heads * s.nq * D;
        float *o1, *o2, *o3, *o4;
        CK(cudaMalloc(&o1, n * 4u));
        CK(cudaMalloc(&o2, n * 4u));
        CK(cudaMalloc(&o3, n * 4u));
        CK(cudaMalloc(&o4, n * 4u));
        CK(cudaMemset(o1, 0xFF, n * 4u));
        CK(cudaMemset(o2, 0x7F, n * 4u));
        CK(cudaMemset(o3, 0xFE, n * 4u));
        CK(cudaMemset(o4, 0x7E, n * 4u));
        const kvq_status s1 = run(kvq_cuda_sage_attn_core_loop, o1, c);
        const kvq_status s2 = run(kvq_cuda_sage_attn_core_fa3, o2, c);
        const kvq_status s3 = run(kvq_cuda_sage_attn_core, o3, c);
        /* V~ given [SAGE-DEV-15]: the default form loads it, the others transpose vc */
        const kvq_status s4 = run_vt(o4, c);
        CK(cudaDeviceSynchronize());
        char what[128];
        snprintf(what, sizeof what, "%s: heads %u nq %u nk %u causal %u buffer %u %s dS<2^%u", form, s.heads, s.nq,
                 s.nk, s.causal, s.buffer, s.ext ? "extremes" : "uniform", s.dspread);
        if (s1 != KVQ_OK || s2 != KVQ_OK || s3 != KVQ_OK || s4 != KVQ_OK) {
            printf("fa3-test %s: status loop %d fa3 %d default %d fa3 with V~ %d: FAILED\n", what, (int)s1, (int)s2,
                   (int)s3, (int)s4);
            fails++;
        } else {
            const uint64_t b = compare(o1, o2, n, what, s.nq);
            char wv[160];
            snprintf(wv, sizeof wv, "%s, V~", what);
            const uint64_t b4 = compare(o1, o4, n, wv, s.nq);
            const uint64_t b3 = plant ? 0u : compare(o2, o3, n, "default core vs fa3", s.nq);
            printf("fa3-test %s: %llu of %llu outputs differ (fa3 vs warpgroup core), %llu with V~ [SAGE-DEV-15]%s\n",
                   what, (unsigned long long)b, (unsigned long long)n, (unsigned long long)b4,
                   b3 ? ", the default core differs from fa3" : "");
            bad += b + b3 + b4;
            total += 2u * n;
        }
        cudaFree(o1), cudaFree(o2), cudaFree(o3), cudaFree(o4);
        free_in(c);
    }
    if (plant) {
        /* the planted core must run (every launch KVQ_OK) and differ */
        const int failed = bad != 0u && fails == 0;
        printf("fa3-test --plant: the planted core (%s) %s (%llu of %llu outputs differ, %d launches failed)\n",
               form,
               fails ? "did not run: the plant is not judged"
                     : failed ? "FAILS the check, as it must" : "PASSES the check: the check is blind",
               (unsigned long long)bad, (unsigned long long)total, fails);
        return failed ? 0 : 1;
    }
    /* qk_bits 4: refused by fa3, the default is the warpgroup core */
    {
        core_in c;
        memset(&c, 0, sizeof c);
        c.a.nq = 200u, c.a.nk = 333u, c.a.dim = D, c.a.tau = 1.0f / sqrtf((float)D), c.a.causal = 1u;
        c.a.buffer = 128u, c.a.qk_bits = 4u, c.heads = 2u;
        make_in(c, 0x6b76712d66613400ull, 0, 3);
        const uint64_t n = (uint64_t)c.heads * c.a.nq * D;
        float *o1, *o3;
        CK(cudaMalloc(&o1, n * 4u));
        CK(cudaMalloc(&o3, n * 4u));
        CK(cudaMemset(o1, 0xFF, n * 4u));
        CK(cudaMemset(o3, 0x7F, n * 4u));
        const kvq_status s2 = run(kvq_cuda_sage_attn_core_fa3, o3, c);
        const kvq_status s1 = run(kvq_cuda_sage_attn_core_loop, o1, c);
        const kvq_status s3 = run(kvq_cuda_sage_attn_core, o3, c);
        CK(cudaDeviceSynchronize());
        const uint64_t b = s1 == KVQ_OK && s3 == KVQ_OK ? compare(o1, o3, n, "qk_bits 4 default", c.a.nq) : n;
        const int ok = s2 == KVQ_E_PARAM && b == 0u;
        printf("fa3-test %s: qk_bits 4: fa3 status %d (KVQ_E_PARAM expected), default core vs warpgroup core %llu of "
               "%llu differ: %s\n",
               form, (int)s2, (unsigned long long)b, (unsigned long long)n, ok ? "PASS" : "FAILED");
        fails += !ok;
        cudaFree(o1), cudaFree(o3);
        free_in(c);
    }
    /* the pipeline on binary32 inputs: KVQ_SAGE_CORE=loop vs the default core */
    for (uint32_t causal = 0; causal < 2u; causal++) {
        kvq_sage_attn a;
        memset(&a, 0, sizeof a);
        a.nq = 700u, a.nk = 1500u, a.dim = D, a.tau = 1.0f / sqrtf((float)D), a.causal = causal;
        a.buffer = 128u, a.qk_bits = 8u;
        const uint32_t H = 2u;
        const size_t ws_bytes = kvq_cuda_sage_attn_workspace(&a, H);
        float *q, *k, *v, *o1, *o2;
        void *ws;
        kvq_cuda_result *r;
        CK(cudaMalloc(&q, (size_t)H * a.nq * D * 4u));
        CK(cudaMalloc(&k, (size_t)H * a.nk * D * 4u));
        CK(cudaMalloc(&v, (size_t)H * a.nk * D * 4u));
        CK(cudaMalloc(&o1, (size_t)H * a.nq * D * 4u));
        CK(cudaMalloc(&o2, (size_t)H * a.nq * D * 4u));
        CK(cudaMalloc(&ws, ws_bytes));
        CK(cudaMalloc(&r, 2u * sizeof(kvq_cuda_result)));
        fill(q, (uint64_t)H * a.nq * D, 0x51u + causal, 4, 0, 0, 1);
        fill(k, (uint64_t)H * a.nk * D, 0x52u + causal, 4, 0, 0, 1);
        fill(v, (uint64_t)H * a.nk * D, 0x53u + causal, 4, 0, 0, 0);
        setenv("KVQ_SAGE_CORE", "loop", 1);
        const kvq_status s1 = kvq_cuda_sage_attn(o1, r, q, k, v, &a, H, ws, ws_bytes, 0);
        unsetenv("KVQ_SAGE_CORE");
        const kvq_status s2 = kvq_cuda_sage_attn(o2, r + 1, q, k, v, &a, H, ws, ws_bytes, 0);
        CK(cudaDeviceSynchronize());
        kvq_cuda_result hr[2];
        CK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
        const uint64_t n = (uint64_t)H * a.nq * D;
        const uint64_t b = compare(o1, o2, n, "pipeline", a.nq);
        const int ok = s1 == KVQ_OK && s2 == KVQ_OK && hr[0].status == (uint32_t)KVQ_OK &&
                       memcmp(&hr[0], &hr[1], sizeof hr[0]) == 0 && b == 0u;
        printf("fa3-test %s: pipeline heads %u nq %u nk %u causal %u: %llu of %llu outputs differ, result words %s: %s\n",
               form, H, a.nq, a.nk, causal, (unsigned long long)b, (unsigned long long)n,
               memcmp(&hr[0], &hr[1], sizeof hr[0]) == 0 ? "equal" : "differ", ok ? "PASS" : "FAILED");
        fails += !ok;
        cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o1), cudaFree(o2), cudaFree(ws), cudaFree(r);
    }
    const int ok = bad == 0u && fails == 0;
    printf("fa3-test check (%s): %llu outputs compared, %llu differ, %d other failures: %s\n", form,
           (unsigned long long)total, (unsigned long long)bad, fails, ok ? "PASS" : "FAILED");
    return ok ? 0 : 1;
}

static void clear_form(void);

/* V~ from the pipeline's V quantizer [SAGE-DEV-15]: the whole pipeline in the
 * default form (the FA3 core at level 4, which loads V~) on binary32 inputs,
 * its workspace filled with 0xA5 first; every byte of the workspace's V~
 * against the plain codes of the same run permuted by kvq_vt_index (0x00 past nk),
 * and the output and result word against the same pipeline with
 * KVQ_SAGE_VT=0 (the core transposes V's codes itself) and with
 * KVQ_SAGE_CORE=loop.  With --plant (the build links sage.cu with
 * KVQ_SAGE_PLANT=3: two quarters of each V~ tile swapped) the check must fail. */
static int check_vt(bool plant)
{
    struct { uint32_t heads, nq, nk, causal; } S[] = {
        {2u, 700u, 1500u, 0u}, {2u, 700u, 1500u, 1u}, {3u, 1u, 65u, 0u}, {1u, 64u, 64u, 1u}, {2u, 300u, 4097u, 0u},
    };
    uint64_t bytes = 0, badb = 0, bado = 0;
    int fails = 0;
    clear_form();
    for (auto &sh : S) {
        kvq_sage_attn a;
        memset(&a, 0, sizeof a);
        a.nq = sh.nq, a.nk = sh.nk, a.dim = D, a.tau = 1.0f / sqrtf((float)D), a.causal = sh.causal;
        a.buffer = 128u, a.qk_bits = 8u;
        const uint32_t H = sh.heads;
        kvq_cuda_sage_attn_ws L;
        if (kvq_cuda_sage_attn_ws_layout(&L, &a, H) != KVQ_OK) {
            printf("fa3-test V~: workspace layout refused: FAILED\n");
            return 1;
        }
        float *q, *k, *v, *o[3];
        void *ws;
        kvq_cuda_result *r;
        CK(cudaMalloc(&q, (size_t)H * a.nq * D * 4u));
        CK(cudaMalloc(&k, (size_t)H * a.nk * D * 4u));
        CK(cudaMalloc(&v, (size_t)H * a.nk * D * 4u));
        for (int i = 0; i < 3; i++) {
            CK(cudaMalloc(&o[i], (size_t)H * a.nq * D * 4u));
            CK(cudaMemset(o[i], 0x7F + i, (size_t)H * a.nq * D * 4u));
        }
        CK(cudaMalloc(&ws, L.total));
        CK(cudaMalloc(&r, 3u * sizeof(kvq_cuda_result)));
        fill(q, (uint64_t)H * a.nq * D, 0x61u + sh.nk, 4, 0, 0, 1);
        fill(k, (uint64_t)H * a.nk * D, 0x62u + sh.nk, 4, 0, 0, 1);
        fill(v, (uint64_t)H * a.nk * D, 0x63u + sh.nk, 4, 0, 0, 0);
        CK(cudaMemset(ws, 0xA5, L.total));
        const kvq_status s0 = kvq_cuda_sage_attn(o[0], r, q, k, v, &a, H, ws, L.total, 0);
        CK(cudaDeviceSynchronize());
        const uint64_t nvt = (uint64_t)H * kvq_vt_head_bytes(a.nk), nvc = (uint64_t)H * a.nk * D;
        std::vector<uint8_t> vt(nvt), vc(nvc);
        CK(cudaMemcpy(vt.data(), (uint8_t *)ws + L.vt, nvt, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(vc.data(), (uint8_t *)ws + L.vc, nvc, cudaMemcpyDeviceToHost));
        std::vector<uint8_t> want(nvt, 0xA5);
        const uint64_t nkp = (uint64_t)((a.nk + 63u) / 64u) * 64u;
        for (uint32_t h = 0; h < H; h++)
            for (uint64_t j = 0; j < nkp; j++)
                for (uint32_t c = 0; c < D; c++)
                    want[h * kvq_vt_head_bytes(a.nk) + kvq_vt_index((uint32_t)j, c)] =
                        j < a.nk ? vc[((uint64_t)h * a.nk + j) * D + c] : 0u;
        uint64_t bb = 0;
        for (uint64_t i = 0; i < nvt; i++)
            if (vt[i] != want[i] && bb++ < 3u)
                printf("  V~ heads %u nk %u: byte %llu: 0x%02x, the permuted codes 0x%02x\n", H, a.nk,
                       (unsigned long long)i, vt[i], want[i]);
        setenv("KVQ_SAGE_VT", "0", 1);
        const kvq_status s1 = kvq_cuda_sage_attn(o[1], r + 1, q, k, v, &a, H, ws, L.total, 0);
        unsetenv("KVQ_SAGE_VT");
        setenv("KVQ_SAGE_CORE", "loop", 1);
        const kvq_status s2 = kvq_cuda_sage_attn(o[2], r + 2, q, k, v, &a, H, ws, L.total, 0);
        unsetenv("KVQ_SAGE_CORE");
        CK(cudaDeviceSynchronize());
        kvq_cuda_result hr[3];
        CK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
        const uint64_t n = (uint64_t)H * a.nq * D;
        const uint64_t b1 = compare(o[1], o[0], n, "pipeline, V~ vs KVQ_SAGE_VT=0", a.nq);
        const uint64_t b2 = compare(o[2], o[0], n, "pipeline, V~ vs KVQ_SAGE_CORE=loop", a.nq);
        const int ok = s0 == KVQ_OK && s1 == KVQ_OK && s2 == KVQ_OK && hr[0].status == (uint32_t)KVQ_OK &&
                       !memcmp(&hr[0], &hr[1], sizeof hr[0]) && !memcmp(&hr[0], &hr[2], sizeof hr[0]) && bb == 0u &&
                       b1 == 0u && b2 == 0u;
        printf("fa3-test V~ [SAGE-DEV-15]: pipeline heads %u nq %u nk %u causal %u: %llu of %llu V~ bytes differ from "
               "the permuted codes; outputs: %llu of %llu differ from KVQ_SAGE_VT=0, %llu from the warpgroup core; "
               "result words %s: %s\n",
               H, a.nq, a.nk, sh.causal, (unsigned long long)bb, (unsigned long long)nvt, (unsigned long long)b1,
               (unsigned long long)n, (unsigned long long)b2,
               !memcmp(&hr[0], &hr[1], sizeof hr[0]) && !memcmp(&hr[0], &hr[2], sizeof hr[0]) ? "equal" : "differ",
               ok ? "PASS" : "FAILED");
        fails += !ok;
        bytes += nvt, badb += bb, bado += b1 + b2;
        cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(ws), cudaFree(r);
        for (int i = 0; i < 3; i++) cudaFree(o[i]);
    }
    if (plant) {
        const int caught = badb != 0u;
        printf("fa3-test --plant: the planted V~ (two quarters of each tile swapped) %s (%llu of %llu V~ bytes "
               "differ)\n",
               caught ? "FAILS the V~ check, as it must" : "PASSES the V~ check: the check is blind",
               (unsigned long long)badb, (unsigned long long)bytes);
        return caught ? 0 : 1;
    }
    printf("fa3-test V~ check: %llu V~ bytes compared, %llu differ; %llu outputs differ; %d cases failed: %s\n",
           (unsigned long long)bytes, (unsigned long long)badb, (unsigned long long)bado, fails,
           fails ? "FAILED" : "PASS");
    return fails ? 1 : 0;
}

/* A KVQ_SAGE_FA3_LEVEL outside 0..6 is refused: KVQ_E_PARAM, the output untouched */
static int check_level_refused(void)
{
    core_in c;
    memset(&c, 0, sizeof c);
    c.a.nq = 200u, c.a.nk = 333u, c.a.dim = D, c.a.tau = 1.0f / sqrtf((float)D), c.a.causal = 0u;
    c.a.buffer = 128u, c.a.qk_bits = 8u, c.heads = 1u;
    make_in(c, 0x6b76712d66613600ull, 0, 3);
    const uint64_t n = (uint64_t)c.heads * c.a.nq * D;
    float *o;
    CK(cudaMalloc(&o, n * 4u));
    int fails = 0;
    for (const char *v : {"7", "-1", "3x", "x"}) {
        CK(cudaMemset(o, 0x7F, n * 4u));
        setenv("KVQ_SAGE_FA3_LEVEL", v, 1);
        const kvq_status st = run(kvq_cuda_sage_attn_core_fa3, o, c);
        unsetenv("KVQ_SAGE_FA3_LEVEL");
        CK(cudaDeviceSynchronize());
        std::vector<uint8_t> h(n * 4u);
        CK(cudaMemcpy(h.data(), o, n * 4u, cudaMemcpyDeviceToHost));
        const int ok = st == KVQ_E_PARAM && std::all_of(h.begin(), h.end(), [](uint8_t b) { return b == 0x7Fu; });
        printf("fa3-test KVQ_SAGE_FA3_LEVEL=%s: status %d (KVQ_E_PARAM expected), output %s: %s\n", v, (int)st,
               std::all_of(h.begin(), h.end(), [](uint8_t b) { return b == 0x7Fu; }) ? "untouched" : "WRITTEN",
               ok ? "PASS" : "FAILED");
        fails += !ok;
    }
    cudaFree(o);
    free_in(c);
    return fails;
}

/* Level 4's precondition on K's scale map (kvq_sage_fa3_k_uniform, [SAGE-DEV-13]):
 * every lane's 16 keys of a 64-key block in one slot.  The pipeline's map (b_k = 64,
 * per thread) and maps whose blocks are multiples of 64 give it; b_k = 32 or 96 (two
 * slots of one lane in a block, or a slot boundary inside a block) do not, and level 4
 * refuses them.  The map is the header's (kvq_sage_scale_slot); nothing launched. */
static int check_k_uniform(void)
{
    struct { uint32_t gran, block; int want; } M[] = {
        {KVQ_SAGE_GRAN_THREAD, 64u, 1}, {KVQ_SAGE_GRAN_THREAD, 128u, 1}, {KVQ_SAGE_GRAN_THREAD, 1024u, 1},
        {KVQ_SAGE_GRAN_THREAD, 32u, 0}, {KVQ_SAGE_GRAN_THREAD, 96u, 0},  {KVQ_SAGE_GRAN_WARP, 64u, 1},
        {KVQ_SAGE_GRAN_BLOCK, 192u, 1}, {KVQ_SAGE_GRAN_BLOCK, 32u, 0},   {KVQ_SAGE_GRAN_BLOCK, 160u, 0},
    };
    int fails = 0;
    kvq_sage_attn a;
    memset(&a, 0, sizeof a);
    a.qk_bits = 8u;
    const kvq_sage_qk pipe = kvq_sage_attn_qk(&a, KVQ_SAGE_ROLE_K);
    const int pok = kvq_sage_fa3_k_uniform(&pipe) == 1;
    printf("fa3-test level 4 precondition: the pipeline's K map (b_k %u): %s\n", pipe.block,
           pok ? "one slot a lane and block: PASS" : "FAILED");
    fails += !pok;
    for (auto &m : M) {
        kvq_sage_qk kq = kvq_sage_qk_default(KVQ_SAGE_ROLE_K, 8u);
        kq.gran = m.gran, kq.block = m.block;
        const int got = kvq_sage_fa3_k_uniform(&kq);
        printf("fa3-test level 4 precondition: K gran %u b_k %u: %d (%d expected): %s\n", m.gran, m.block, got, m.want,
               got == m.want ? "PASS" : "FAILED");
        fails += got != m.want;
    }
    return fails;
}

/* the forms checked and timed: {name, key (--forms), KVQ_SAGE_FA3_SERIAL, KVQ_SAGE_FA3_LEVEL} */
struct form {
    const char *name, *key, *serial, *level;
    bool vt;                                 /* given V~ [SAGE-DEV-15] (timed only: every check runs it) */
};
static const form FORMS[] = {
    {"serial", "s", "1", "2", false},
    {"ping-pong L0", "0", NULL, "0", false},
    {"ping-pong L1", "1", NULL, "1", false},
    {"ping-pong L2", "2", NULL, "2", false},
    {"ping-pong L3", "3", NULL, "3", false},
    {"ping-pong L3 V~", "3v", NULL, "3", true},  /* level 3 given V~ */
    {"ping-pong L4", "4", NULL, "4", false},    /* level 4, the leaner per-block stream */
    {"ping-pong L4 V~", "4v", NULL, "4", true},  /* level 4 given V~ */
    {"ping-pong L5", "5", NULL, "5", false},    /* level 5, level 4's fixed per-block cost off the loop */
    {"ping-pong L5 V~", "5v", NULL, "5", true},  /* level 5 given V~ */
    {"ping-pong L6", "6", NULL, "6", false},    /* level 6, the producer's dS and K-scale loads ahead */
    {"ping-pong L6 V~", "6v", NULL, NULL, true}, /* the default given V~: level 6 */
};
enum { F_L0 = 1, F_L3 = 4, F_L3V = 5, F_L4 = 6, F_L4V = 7, F_L5 = 8, F_L5V = 9, F_L6 = 10, F_L6V = 11 };
#define NFORMS (sizeof FORMS / sizeof FORMS[0])
static bool g_form_on[NFORMS] = {true, true, true, true, true, true, true, true, true, true, true, true};   /* --forms */

static void set_form(const form &f)
{
    if (f.serial) setenv("KVQ_SAGE_FA3_SERIAL", f.serial, 1);
    else unsetenv("KVQ_SAGE_FA3_SERIAL");
    if (f.level) setenv("KVQ_SAGE_FA3_LEVEL", f.level, 1);
    else unsetenv("KVQ_SAGE_FA3_LEVEL");
}

static void clear_form(void)
{
    unsetenv("KVQ_SAGE_FA3_SERIAL");
    unsetenv("KVQ_SAGE_FA3_LEVEL");
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2u];
}

static int time_cores(const std::vector<uint32_t> &sizes, uint32_t reps, uint32_t profile)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (uint32_t n : sizes)
        for (uint32_t causal = 0; causal < 2u; causal++) {
            if (profile && causal) continue;
            core_in c;
            memset(&c, 0, sizeof c);
            c.a.nq = n, c.a.nk = n, c.a.dim = D, c.a.tau = 1.0f / sqrtf((float)D), c.a.causal = causal;
            c.a.buffer = 128u, c.a.qk_bits = 8u, c.heads = 32u;
            make_in(c, 0x6b76712d66613500ull + n + causal, 0, 3);
            const uint64_t on = (uint64_t)c.heads * n * D;
            if (profile) {
                float *o;
                CK(cudaMalloc(&o, on * 4u));
                for (const char *lv : {"0", "1", "2", "3", "4"}) {
                    setenv("KVQ_SAGE_FA3_LEVEL", lv, 1);
                    const kvq_status st = run(kvq_cuda_sage_attn_core_fa3, o, c);
                    CK(cudaDeviceSynchronize());
                    printf("fa3-test --profile %u: ping-pong level %s: status %d\n", n, lv, (int)st);
                }
                clear_form();
                cudaFree(o);
                free_in(c);
                continue;
            }
            void *cs, *cd;
            float *ol, *of[NFORMS];
            CK(cudaMalloc(&ol, on * 4u));
            for (size_t f = 0; f < NFORMS; f++) CK(cudaMalloc(&of[f], on * 4u));
            CK(cudaMalloc(&cs, c.bytes));
            CK(cudaMalloc(&cd, c.bytes));
            CK(cudaMemset(cs, 0, c.bytes));
            std::vector<float> tl, tf[NFORMS], tc;
            kvq_status st = KVQ_OK;
            auto timed = [&](std::vector<float> &tv, bool rec, auto fn) {
                float ms;
                CK(cudaEventRecord(e0));
                fn();
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (rec) tv.push_back(ms);
            };
            for (uint32_t r = 0; r <= reps; r++) {              /* round 0 warms up */
                timed(tl, r > 0u, [&] { st = (kvq_status)(st | run(kvq_cuda_sage_attn_core_loop, ol, c)); });
                for (size_t f = 0; f < NFORMS; f++) {
                    if (!g_form_on[f]) continue;
                    set_form(FORMS[f]);
                    timed(tf[f], r > 0u, [&] {
                        st = (kvq_status)(st | (FORMS[f].vt ? run_vt(of[f], c) : run(kvq_cuda_sage_attn_core_fa3, of[f], c)));
                    });
                    clear_form();
                }
                timed(tc, r > 0u, [&] { CK(cudaMemcpyAsync(cd, cs, c.bytes, cudaMemcpyDeviceToDevice)); });
            }
            uint64_t bad = 0;
            for (size_t f = 0; f < NFORMS; f++)
                if (g_form_on[f]) bad += compare(ol, of[f], on, FORMS[f].name, n);
            const double ml = median(tl), mc = median(tc), m0 = g_form_on[F_L0] ? median(tf[F_L0]) : NAN;
            const double flop = 4.0 * c.heads * (double)n * n * D * (causal ? 0.5 : 1.0);
            printf("fa3-test timing: 32 heads, N = %u, causal %u, buffer 128; medians of %u: warpgroup core %.3f ms "
                   "(%.0f TFLOP/s)",
                   n, causal, reps, ml, flop / (ml * 1e-3) / 1e12);
            for (size_t f = 0; f < NFORMS; f++) {
                if (!g_form_on[f]) continue;
                const double m = median(tf[f]);
                printf(", %s %.3f ms (%.0f TFLOP/s, %.2fx warpgroup", FORMS[f].name, m, flop / (m * 1e-3) / 1e12,
                       ml / m);
                if (g_form_on[F_L0]) printf(", %.2fx L0", m0 / m);
                printf(")");
            }
            printf(", copy of the %zu input bytes %.3f ms; ping-pong L3 / copy = %.2f", c.bytes, mc,
                   g_form_on[F_L3] ? median(tf[F_L3]) / mc : NAN);
            if (g_form_on[F_L3] && g_form_on[F_L3V])
                printf("; L3 given V~ %.3fx L3 (time without / time with)", median(tf[F_L3]) / median(tf[F_L3V]));
            /* level 4 against level 3, side by side (time of L3 / time of L4) */
            if (g_form_on[F_L3] && g_form_on[F_L4])
                printf("; L4 %.3fx L3", median(tf[F_L3]) / median(tf[F_L4]));
            if (g_form_on[F_L3V] && g_form_on[F_L4V])
                printf("; L4 given V~ %.3fx L3 given V~", median(tf[F_L3V]) / median(tf[F_L4V]));
            /* level 5 against level 4, side by side (time of L4 / time of L5) */
            if (g_form_on[F_L4] && g_form_on[F_L5])
                printf("; L5 %.3fx L4", median(tf[F_L4]) / median(tf[F_L5]));
            if (g_form_on[F_L4V] && g_form_on[F_L5V])
                printf("; L5 given V~ %.3fx L4 given V~", median(tf[F_L4V]) / median(tf[F_L5V]));
            /* level 6 against level 5, side by side (time of L5 / time of L6) */
            if (g_form_on[F_L5] && g_form_on[F_L6])
                printf("; L6 %.3fx L5", median(tf[F_L5]) / median(tf[F_L6]));
            if (g_form_on[F_L5V] && g_form_on[F_L6V])
                printf("; L6 given V~ %.3fx L5 given V~", median(tf[F_L5V]) / median(tf[F_L6V]));
            printf("; outputs %s (%llu differ)%s\n", bad ? "DIFFER" : "equal", (unsigned long long)bad,
                   st != KVQ_OK ? ", a launch FAILED" : "");
            cudaFree(ol);
            for (size_t f = 0; f < NFORMS; f++) cudaFree(of[f]);
            cudaFree(cs), cudaFree(cd);
            free_in(c);
            if (bad || st != KVQ_OK) return 1;
        }
    return 0;
}

/* The whole pipeline (kvq_cuda_sage_attn_stages: events between the stages)
 * with the V quantizer writing V~ for the core [SAGE-DEV-15] and with
 * KVQ_SAGE_VT=0 (the core transposes), alternately, and a device-to-device
 * copy of V's binary32 bytes; 32 heads, N = nq = nk in sizes, causal and not,
 * buffer 128; medians of reps. */
static int time_pipeline(const std::vector<uint32_t> &sizes, uint32_t reps)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    clear_form();
    int rc = 0;
    for (uint32_t n : sizes)
        for (uint32_t causal = 0; causal < 2u; causal++) {
            kvq_sage_attn a;
            memset(&a, 0, sizeof a);
            a.nq = n, a.nk = n, a.dim = D, a.tau = 1.0f / sqrtf((float)D), a.causal = causal;
            a.buffer = 128u, a.qk_bits = 8u;
            const uint32_t H = 32u;
            const size_t ne = (size_t)H * n * D, wsb = kvq_cuda_sage_attn_workspace(&a, H);
            float *q, *k, *v, *o[2], *vcopy;
            void *ws;
            kvq_cuda_result *r;
            CK(cudaMalloc(&q, ne * 4u));
            CK(cudaMalloc(&k, ne * 4u));
            CK(cudaMalloc(&v, ne * 4u));
            CK(cudaMalloc(&vcopy, ne * 4u));
            CK(cudaMalloc(&o[0], ne * 4u));
            CK(cudaMalloc(&o[1], ne * 4u));
            CK(cudaMalloc(&ws, wsb));
            CK(cudaMalloc(&r, 2u * sizeof(kvq_cuda_result)));
            fill(q, ne, 0x71u + n + causal, 4, 0, 0, 1);
            fill(k, ne, 0x72u + n + causal, 4, 0, 0, 1);
            fill(v, ne, 0x73u + n + causal, 4, 0, 0, 0);
            std::vector<float> tot[2], tv[2], tcore[2], tc;
            kvq_status st = KVQ_OK;
            for (uint32_t rep = 0; rep <= reps; rep++) {        /* round 0 warms up */
                for (int w = 0; w < 2; w++) {
                    float ms[6];
                    if (w == 1) setenv("KVQ_SAGE_VT", "0", 1);
                    st = (kvq_status)(st | kvq_cuda_sage_attn_stages(ms, o[w], r + w, q, k, v, &a, H, ws, wsb, 0));
                    unsetenv("KVQ_SAGE_VT");
                    if (rep > 0u) {
                        float t = 0.0f;
                        for (int i = 0; i < 6; i++) t += ms[i];
                        tot[w].push_back(t), tv[w].push_back(ms[4]), tcore[w].push_back(ms[5]);
                    }
                }
                float ms;
                CK(cudaEventRecord(e0));
                CK(cudaMemcpyAsync(vcopy, v, ne * 4u, cudaMemcpyDeviceToDevice));
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (rep > 0u) tc.push_back(ms);
            }
            CK(cudaDeviceSynchronize());
            kvq_cuda_result hr[2];
            CK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
            const uint64_t bad = compare(o[1], o[0], ne, "pipeline V~ vs KVQ_SAGE_VT=0", n);
            const double mc = median(tc);
            /* the V quantizer's compulsory bytes: V (binary32), its codes, V~ when written, the scales */
            const double vin = ne * 4.0, vout = (double)ne + 4.0 * H * D, vtb = (double)H * kvq_vt_head_bytes(n);
            const double cbw = 2.0 * vin / (mc * 1e-3);
            printf("fa3-test pipeline: 32 heads, N = %u, causal %u, buffer 128; medians of %u: with V~ [SAGE-DEV-15] "
                   "%.3f ms (V quantizer %.3f ms, core %.3f ms), KVQ_SAGE_VT=0 %.3f ms (V quantizer %.3f ms, core "
                   "%.3f ms): pipeline %.3fx, core %.3fx, V quantizer %.3fx (time without / time with); copy of V's "
                   "%.0f MB %.3f ms: V quantizer with V~ %.3f of copy bandwidth, without %.3f (compulsory bytes; two "
                   "passes over V: floor 0.556 without V~); outputs %s (%llu differ), result words %s%s\n",
                   n, causal, reps, median(tot[0]), median(tv[0]), median(tcore[0]), median(tot[1]), median(tv[1]),
                   median(tcore[1]), median(tot[1]) / median(tot[0]), median(tcore[1]) / median(tcore[0]),
                   median(tv[1]) / median(tv[0]), vin / 1e6, mc,
                   (vin + vout + vtb) / (median(tv[0]) * 1e-3) / cbw, (vin + vout) / (median(tv[1]) * 1e-3) / cbw,
                   bad ? "DIFFER" : "equal", (unsigned long long)bad,
                   !memcmp(&hr[0], &hr[1], sizeof hr[0]) && hr[0].status == (uint32_t)KVQ_OK ? "equal, KVQ_OK" : "DIFFER",
                   st != KVQ_OK ? ", a call FAILED" : "");
            if (bad || st != KVQ_OK || memcmp(&hr[0], &hr[1], sizeof hr[0])) rc = 1;
            cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(vcopy), cudaFree(o[0]), cudaFree(o[1]), cudaFree(ws),
                cudaFree(r);
        }
    return rc;
}

int main(int argc, char **argv)
{
    bool plant = false, timing = false, time_only = false, pipe = false, profile_vt = false, profile_34 = false;
    const char *pl_a = "3", *pl_b = "4";                /* --profile-34: levels 3 and 4; --profile-45: 4 and 5; --profile-56: 5 and 6 */
    uint32_t reps = 10u, profile = 0u;
    const char *commit = "unknown";
    std::vector<uint32_t> sizes = {4096u, 8192u, 16384u, 32768u};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plant")) plant = true;
        else if (!strcmp(argv[i], "--time")) timing = true;
        else if (!strcmp(argv[i], "--time-only")) timing = time_only = true;
        else if (!strcmp(argv[i], "--pipe")) pipe = true;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc) profile = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--profile-vt") && i + 1 < argc) {
            profile = (uint32_t)strtoul(argv[++i], NULL, 10);
            profile_vt = true;
        }
        else if (!strcmp(argv[i], "--profile-34") && i + 1 < argc) {
            profile = (uint32_t)strtoul(argv[++i], NULL, 10);
            profile_vt = profile_34 = true;
        }
        else if (!strcmp(argv[i], "--profile-45") && i + 1 < argc) {
            profile = (uint32_t)strtoul(argv[++i], NULL, 10);
            profile_vt = profile_34 = true;
            pl_a = "4", pl_b = "5";
        }
        else if (!strcmp(argv[i], "--profile-56") && i + 1 < argc) {
            profile = (uint32_t)strtoul(argv[++i], NULL, 10);
            profile_vt = profile_34 = true;
            pl_a = "5", pl_b = "6";
        }
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc) commit = argv[++i];
        else if (!strcmp(argv[i], "--forms") && i + 1 < argc) {
            /* a comma-separated list of form keys: s (serial), 0, 1, 2, 3 (ping-pong levels) */
            const char *list = argv[++i];
            for (size_t f = 0; f < NFORMS; f++) g_form_on[f] = false;
            bool any = false;
            for (const char *q = list; *q;) {
                const char *e = strchr(q, ',');
                const size_t len = e ? (size_t)(e - q) : strlen(q);
                bool known = false;
                for (size_t f = 0; f < NFORMS; f++)
                    if (strlen(FORMS[f].key) == len && !strncmp(q, FORMS[f].key, len)) g_form_on[f] = known = true;
                if (!known) {
                    fprintf(stderr, "fa3-test: --forms '%s': '%.*s' is not a form (s, 0, 1, 2, 3, 3v, 4, 4v, 5, 5v, 6, 6v)\n", list, (int)len, q);
                    return 2;
                }
                any = true;
                q = e ? e + 1 : q + len;
            }
            if (!any) {
                fprintf(stderr, "fa3-test: --forms '%s': no form named (s, 0, 1, 2, 3, 3v, 4, 4v, 5, 5v, 6, 6v)\n", list);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            sizes.clear();
            for (char *s = argv[++i]; *s;) {
                char *e;
                const unsigned long v = strtoul(s, &e, 10);
                if (e == s || v < 64u || v > 131072u) {
                    fprintf(stderr, "fa3-test: --sizes: '%s': sizes 64..131072, comma-separated\n", argv[i]);
                    return 2;
                }
                sizes.push_back((uint32_t)v);
                s = *e == ',' ? e + 1 : e;
                if (*e != ',' && *e != '\0') {
                    fprintf(stderr, "fa3-test: --sizes: '%s': sizes 64..131072, comma-separated\n", argv[i]);
                    return 2;
                }
            }
        } else {
            fprintf(stderr, "fa3-test: argument %d (%s): not understood\n"
                            "usage: kvq_sage_fa3_test [--plant] [--time | --time-only] [--forms s,0,1,2,3,3v,4,4v,5,5v,6,6v] "
                            "[--sizes N,N,..] [--reps R] [--pipe] [--profile N] [--profile-vt N] [--profile-34 N] [--profile-45 N] [--profile-56 N] [--commit TEXT]\n",
                    i, argv[i]);
            return 2;
        }
    }
    if (reps < 3u || reps > 1000u) {
        fprintf(stderr, "fa3-test: --reps 3..1000\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("fa3-test: SKIPPED (no CUDA device)\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9 || prop.minor != 0) {
        printf("fa3-test: SKIPPED (%s is sm_%d%d; the cores are sm_90a)\n", prop.name, prop.major, prop.minor);
        return 77;
    }
    if (!kvq_cuda_sage_attn_fa3_built()) {
        printf("fa3-test: SKIPPED (the FA3 core was built without the CUTLASS/CuTe headers)\n");
        return 77;
    }
    printf("# fa3-test%s: device %s, commit %s\n", plant ? " --plant (must FAIL)" : "", prop.name, commit);
    if (profile && profile < 64u) {
        fprintf(stderr, "fa3-test: --profile N: N >= 64\n");
        return 2;
    }
    if (profile && profile_vt) {
        /* level 3 without V~ (the producer transposes), then given V~ [SAGE-DEV-15] (for ncu) */
        core_in c;
        memset(&c, 0, sizeof c);
        c.a.nq = profile, c.a.nk = profile, c.a.dim = D, c.a.tau = 1.0f / sqrtf((float)D), c.a.causal = 0u;
        c.a.buffer = 128u, c.a.qk_bits = 8u, c.heads = 32u;
        make_in(c, 0x6b76712d66613700ull, 0, 3);
        float *o;
        CK(cudaMalloc(&o, (size_t)c.heads * profile * D * 4u));
        clear_form();
        setenv("KVQ_SAGE_FA3_LEVEL", pl_a, 1);
        const kvq_status s0 = profile_34 ? run_vt(o, c) : run(kvq_cuda_sage_attn_core_fa3, o, c);
        CK(cudaDeviceSynchronize());
        if (profile_34) setenv("KVQ_SAGE_FA3_LEVEL", pl_b, 1);
        const kvq_status s1 = run_vt(o, c);
        CK(cudaDeviceSynchronize());
        kvq_status s2 = KVQ_OK, s3 = KVQ_OK;
        if (profile_34) {                                   /* then both transposing V's codes */
            setenv("KVQ_SAGE_FA3_LEVEL", pl_a, 1);
            s2 = run(kvq_cuda_sage_attn_core_fa3, o, c);
            CK(cudaDeviceSynchronize());
            setenv("KVQ_SAGE_FA3_LEVEL", pl_b, 1);
            s3 = run(kvq_cuda_sage_attn_core_fa3, o, c);
            CK(cudaDeviceSynchronize());
        }
        clear_form();
        if (profile_34)
            printf("fa3-test --profile-%s%s %u: level %s given V~ status %d, level %s given V~ status %d, level %s %d, "
                   "level %s %d\n", pl_a, pl_b, profile, pl_a, (int)s0, pl_b, (int)s1, pl_a, (int)s2, pl_b, (int)s3);
        else
            printf("fa3-test --profile-vt %u: level 3 status %d, level 3 given V~ status %d\n", profile, (int)s0,
                   (int)s1);
        free_in(c);
        cudaFree(o);
        return s0 == KVQ_OK && s1 == KVQ_OK && s2 == KVQ_OK && s3 == KVQ_OK ? 0 : 1;
    }
    if (profile) return time_cores(std::vector<uint32_t>{profile}, reps, profile);
    if (time_only) {
        if (plant) {
            fprintf(stderr, "fa3-test: --plant and --time-only: the planted build is only checked\n");
            return 2;
        }
        const int tr = time_cores(sizes, reps, 0u);
        return pipe ? (time_pipeline(sizes, reps) | tr) : tr;
    }
    int rc = 0;
    if (!plant) {
        const int fi = check_i2f(), fl = check_level_refused(), fk = check_k_uniform();
        rc = fi + fl + fk != 0;
        printf("fa3-test i2f and level checks: %d failed: %s\n", fi + fl + fk, rc ? "FAILED" : "PASS");
    }
    /* the serial form first (it has no turn-taking to hang on), then the ping-pong levels */
    int caught = 0, nform = 0;
    for (size_t f = 0; f < NFORMS; f++) {
        if (!g_form_on[f] || FORMS[f].vt) continue;
        nform++;
        set_form(FORMS[f]);
        const int r = check_cores(plant, FORMS[f].name);
        clear_form();
        if (plant) caught += r == 0;
        else if (r != 0) rc = r;
    }
    const int vr = check_vt(plant);
    if (plant) {
        printf("fa3-test --plant: the planted core fails the check in %d of %d forms%s; the planted V~ %s\n", caught,
               nform, caught == nform ? ", as it must" : ": the check is blind to it somewhere",
               vr == 0 ? "fails its check, as it must" : "PASSES its check: blind");
        return caught == nform && vr == 0 ? 0 : 1;
    }
    if (vr != 0) rc = vr;
    if (rc != 0 || !timing) return rc;
    const int tr = time_cores(sizes, reps, 0u);
    return pipe ? (time_pipeline(sizes, reps) | tr) : tr;
}
