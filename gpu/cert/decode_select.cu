/*
 * decode_select.cu -- the select kernel of the certified CERT decode step on
 * CUDA (cert_select_kernel; decode_common.cuh says how the step is split):
 * one CTA a query head, the selection [CERT-DEV-03], promotion, the checks
 * and the ladder [CERT-DEV-04], staging of promoted values [CERT-DEV-01];
 * and its launch.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda_pipeline.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "decode_common.cuh"

#ifdef KVQ_CERT_TIMELINE
__device__ unsigned long long tl_sel[TL_HEADS][TL_SEL_N];
#endif

/* ---- selection, checks, ladder ------------------------------------------- */

/* One pass over the blocks for a candidate selection: exact integer sums,
 * maxima, and binary64 sums rounded up (acc) or down (vlo), each a valid bound
 * whatever the order of the reduction. */
struct eval_acc {
    unsigned long long sl, sh;           /* sum of lo, hi over the selected full blocks */
    double acc, vlo;                     /* sum hi_b eta_b (S, not promoted), up; sum lo_b nu_b (S), down */
    uint32_t ksel;                       /* selected full blocks */
    float u, lam, emax, vh;              /* max over T of RU(L~ + Delta'); max over S of RD(L~ - Delta'); max eta; max Vh */
    double pdn;                          /* paper: sum hi_b eta_b over the promoted blocks, down */
    uint32_t nbp;                        /* paper: promoted blocks with eta_b > vtol nu_b */
};

struct EvalOp {
    __device__ eval_acc operator()(const eval_acc &a, const eval_acc &b) const
    {
        eval_acc r;
        r.sl = a.sl + b.sl;
        r.sh = a.sh + b.sh;
        r.acc = __dadd_ru(a.acc, b.acc);
        r.vlo = __dadd_rd(a.vlo, b.vlo);
        r.ksel = a.ksel + b.ksel;
        r.u = fmaxf(a.u, b.u);
        r.lam = fmaxf(a.lam, b.lam);
        r.emax = fmaxf(a.emax, b.emax);
        r.vh = fmaxf(a.vh, b.vh);
        r.pdn = __dadd_rd(a.pdn, b.pdn);
        r.nbp = a.nbp + b.nbp;
        return r;
    }
};

/* The empty pass: the identity of EvalOp. */
__device__ __forceinline__ eval_acc eval_zero()
{
    eval_acc x;
    x.sl = x.sh = 0ull;
    x.acc = x.vlo = 0.0;
    x.ksel = 0u;
    x.u = x.lam = -INFINITY;
    x.emax = x.vh = 0.0f;
    x.pdn = 0.0;
    x.nbp = 0u;
    return x;
}

/* EvalOp over the 32 lanes of a warp by an xor butterfly: every lane ends
 * with the same value (each EvalOp component is commutative, the directed
 * binary64 additions included).  PAPER: pdn and nbp too (else they are 0). */
template <bool PAPER>
__device__ __forceinline__ eval_acc warp_eval(eval_acc v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        eval_acc w;
        w.sl = __shfl_xor_sync(0xffffffffu, v.sl, o);
        w.sh = __shfl_xor_sync(0xffffffffu, v.sh, o);
        w.acc = __shfl_xor_sync(0xffffffffu, v.acc, o);
        w.vlo = __shfl_xor_sync(0xffffffffu, v.vlo, o);
        w.ksel = __shfl_xor_sync(0xffffffffu, v.ksel, o);
        w.u = __shfl_xor_sync(0xffffffffu, v.u, o);
        w.lam = __shfl_xor_sync(0xffffffffu, v.lam, o);
        w.emax = __shfl_xor_sync(0xffffffffu, v.emax, o);
        w.vh = __shfl_xor_sync(0xffffffffu, v.vh, o);
        w.pdn = PAPER ? __shfl_xor_sync(0xffffffffu, v.pdn, o) : 0.0;
        w.nbp = PAPER ? __shfl_xor_sync(0xffffffffu, v.nbp, o) : 0u;
        v = EvalOp()(v, w);
    }
    return v;
}

typedef cub::BlockReduce<float, SEL_THREADS> RedF;
typedef cub::BlockScan<uint32_t, SEL_THREADS> ScanU;

/* The fast selector [CERT-DEV-03]: SEL_BUCKETS buckets of floor(16 (M - L~)),
 * one a thread; the members of the boundary bucket, at most SEL_GATHER of
 * them, are ranked in shared memory. */
#define SEL_BUCKETS 1024u
#define SEL_BSCALE  16.0f
/* SEL_GATHER: decode_common.cuh (the workspace's default gather capacity) */
static_assert(SEL_BUCKETS == SEL_THREADS && SEL_GATHER <= SEL_THREADS,
              "the fast selector gives each thread one bucket and one gathered block");

/* counts and exact integer mass sums of a run of blocks */
struct cnt_mass {
    uint32_t c;
    unsigned long long l, h;
};

/* Everything the ladder needs about one candidate selection [CERT-DEV-04]. */
struct eval_out {
    bool rank, bound, value, cover;
    float ekey, eval, alpha, ekey_paper, vh;
};

struct sel_smem {
    union {
        typename RedF::TempStorage rf;
        typename ScanU::TempStorage su;
        typename cub::BlockReduce<uint32_t, SEL_THREADS>::TempStorage rx;
        eval_acc re[SEL_THREADS / 32u];           /* the warps' EvalOp results */
    } t;
    /* bucket counters: 16-bit chunks of the masses in 32-bit words, lo in
     * hm[0..2], hi in hm[3..5] (the radix passes and the fast buckets are
     * never live together: the fast selector keeps its scanned buckets in
     * registers) */
    union {
        struct {
            uint32_t cnt[256];
            uint32_t hm[6][256];
        } rx;
        struct {
            uint32_t cnt[SEL_BUCKETS];
            uint32_t hm[6][SEL_BUCKETS];
        } fb;
    } h;
    uint32_t gkey[SEL_GATHER], gidx[SEL_GATHER];  /* the boundary bucket's blocks */
    uint16_t gsrt[SEL_GATHER];                    /* gathered slots in selection order */
    uint32_t gn, gmin, pmin;
    cnt_mass above, wagg[SEL_THREADS / 32u], wtot;
    uint32_t wcnt[SEL_THREADS / 32u];
    eval_acc ea;
    eval_out ev;                                   /* judge's result (warp 0's) */
    uint32_t mxk[3];                               /* ord_key of Vmax, delta1, Delta' */
    float bf;
    unsigned long long tlo, thi;
    uint32_t bx, by, tcnt;
    unsigned long long bu, bu2;
    uint32_t nown;                                 /* blocks this head stages */
    uint32_t ntry;                                 /* early claim attempts (settle) */
    uint32_t ut;                                   /* ord_key of U, max over T of RU(L~ + Delta') (0: T empty) */
    eval_acc pa;                                   /* paper: the sums over all blocks [CERT-DEV-10] */
};

/* Inclusive scan of v over the lanes of a warp (exact integer sums). */
__device__ __forceinline__ cnt_mass warp_scan_cm(cnt_mass v, uint32_t lane)
{
#pragma unroll
    for (uint32_t o = 1u; o < 32u; o <<= 1) {
        const uint32_t c = __shfl_up_sync(0xffffffffu, v.c, o);
        const unsigned long long l = __shfl_up_sync(0xffffffffu, v.l, o);
        const unsigned long long h = __shfl_up_sync(0xffffffffu, v.h, o);
        if (lane >= o) {
            v.c += c;
            v.l += l;
            v.h += h;
        }
    }
    return v;
}

/* Inclusive scan of x over the CTA in thread order (incl) and its total:
 * shuffles within each warp, then one warp scans the warp totals.  Exact
 * integer sums.  The caller syncs before the next call. */
__device__ void scan_cm(sel_smem &S, const cnt_mass &x, cnt_mass &incl, cnt_mass &tot)
{
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const cnt_mass v = warp_scan_cm(x, lane);
    if (lane == 31u) S.wagg[warp] = v;
    __syncthreads();
    if (warp == 0u) {
        const uint32_t nw = blockDim.x >> 5;
        cnt_mass w;
        w.c = 0u;
        w.l = w.h = 0ull;
        if (lane < nw) w = S.wagg[lane];
        const cnt_mass own = w;
        w = warp_scan_cm(w, lane);
        if (lane < nw) {                      /* exclusive prefix of warp `lane` */
            S.wagg[lane].c = w.c - own.c;
            S.wagg[lane].l = w.l - own.l;
            S.wagg[lane].h = w.h - own.h;
        }
        if (lane == 31u) S.wtot = w;
    }
    __syncthreads();
    incl.c = v.c + S.wagg[warp].c;
    incl.l = v.l + S.wagg[warp].l;
    incl.h = v.h + S.wagg[warp].h;
    tot = S.wtot;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinU {
    __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a < b ? a : b; }
};

/* Coverage test in integer masses [CERT-DEV-03]: tail * tau <= sel * (1 - tau),
 * decided with directed rounding so that a pass implies the real inequality
 * for the masses e^{L~_b - M} that the integers enclose. */
__device__ __forceinline__ bool cover_ok(unsigned long long tail_hi, unsigned long long sel_lo,
                                         float tau)
{
    if (tail_hi == 0ull) return true;
    const double lhs = __dmul_ru(__ull2double_ru(tail_hi), (double)tau);
    const double rhs = __dmul_rd(__ull2double_rd(sel_lo), __dsub_rd(1.0, (double)tau));
    return lhs <= rhs;
}

struct sel_pred {
    uint32_t mode;                   /* 0: coverage and clamp, 1: fixed count */
    uint32_t kmin, kcap, kfix;
    unsigned long long full_hi, res_lo;
    float tau;
    __device__ bool operator()(uint32_t k, unsigned long long set_lo,
                               unsigned long long set_hi) const
    {
        if (mode == 1u) return k >= kfix;
        if (k >= kcap) return true;
        return k >= kmin && cover_ok(full_hi - set_hi, set_lo + res_lo, tau);
    }
};

/* The exact mass sum of bucket dg from its three 16-bit chunk counters
 * (k = 0: lo, 3: hi). */
template <uint32_t NBK>
__device__ __forceinline__ unsigned long long chunk_mass(const uint32_t (*hm)[NBK], uint32_t k,
                                                         uint32_t dg)
{
    return (unsigned long long)hm[k][dg] + ((unsigned long long)hm[k + 1u][dg] << 16) +
           ((unsigned long long)hm[k + 2u][dg] << 32);
}

/* Adds one block's count and masses (vl, vh) to bucket dg; every lane of the
 * warp calls it (dg = 0xffff: nothing to add).  Each count and mass goes to
 * the bucket's 32-bit counters in 16-bit chunks (a mass is below 2^41: three
 * chunks), by native shared atomics.  When the whole warp has one bucket (the
 * far tail of a long head), its masses are added first (exact: their 21-bit
 * halves summed over 32 lanes fit 32 bits), and one lane adds the sums (below
 * 2^46, three chunks again).  No counter overflows: at most nq <= 2^16
 * additions reach one, each below 2^16.  With umx, the bucket's maximum of
 * the ordered keys uk (0: none) is raised too. */
template <uint32_t NBK>
__device__ __forceinline__ void bucket_add(uint32_t *cnt, uint32_t (*hm)[NBK], uint32_t dg,
                                           unsigned long long vl, unsigned long long vh,
                                           uint32_t *umx = NULL, uint32_t uk = 0u)
{
    const uint32_t d0 = __shfl_sync(0xffffffffu, dg, 0);
    if (__all_sync(0xffffffffu, dg == d0)) {
        if (d0 == 0xffffu) return;
        const uint32_t l0 = __reduce_add_sync(0xffffffffu, (uint32_t)(vl & 0x1fffffull));
        const uint32_t l1 = __reduce_add_sync(0xffffffffu, (uint32_t)(vl >> 21));
        const uint32_t h0 = __reduce_add_sync(0xffffffffu, (uint32_t)(vh & 0x1fffffull));
        const uint32_t h1 = __reduce_add_sync(0xffffffffu, (uint32_t)(vh >> 21));
        if (umx != NULL) uk = __reduce_max_sync(0xffffffffu, uk);
        vl = ((unsigned long long)l1 << 21) + l0;
        vh = ((unsigned long long)h1 << 21) + h0;
        if ((threadIdx.x & 31u) != 0u) return;
        atomicAdd(&cnt[d0], 32u);
    } else {
        if (dg == 0xffffu) return;
        atomicAdd(&cnt[dg], 1u);
    }
    if (umx != NULL && uk != 0u) atomicMax(&umx[dg], uk);
#pragma unroll
    for (uint32_t k = 0; k < 3u; k++) {
        atomicAdd(&hm[k][dg], (uint32_t)((vl >> (16u * k)) & 0xffffu));
        atomicAdd(&hm[3u + k][dg], (uint32_t)((vh >> (16u * k)) & 0xffffu));
    }
}

/* Radix select over the ordered keys of head qh (the general selector, used
 * when the fast one's boundary bucket holds more than its gather capacity):
 * the selection is the set of the first K blocks of the order "L~
 * descending, ties to the lower index", K the least k with pred(k).  Writes
 * flag[b] = 1 for the selected blocks, 0 for the others.  Returns K. */
__device__ uint32_t radix_select(sel_smem &S, const uint32_t *key, const unsigned long long *lo,
                                 const unsigned long long *hi, uint32_t nq, const sel_pred &P,
                                 uint8_t *flag)
{
    const uint32_t tid = threadIdx.x;
    uint32_t prefix = 0, pmask = 0;
    uint32_t above_cnt = 0;
    unsigned long long above_lo = 0, above_hi = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint32_t j = tid; j < 7u * 256u; j += blockDim.x) {
            if (j < 256u) S.h.rx.cnt[j] = 0;
            else S.h.rx.hm[j / 256u - 1u][j % 256u] = 0;
        }
        __syncthreads();
        const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
#pragma unroll 2
        for (uint32_t rd = 0; rd < nround; rd++) {
            const uint32_t b = rd * blockDim.x + tid;
            uint32_t dg = 0xffffu;
            unsigned long long vl = 0, vh = 0;
            if (b < nq) {
                const uint32_t kb = key[b];
                if ((kb & pmask) == prefix) {
                    dg = (kb >> shift) & 255u;
                    vl = lo[b];
                    vh = hi[b];
                }
            }
            bucket_add<256u>(S.h.rx.cnt, S.h.rx.hm, dg, vl, vh);
        }
        __syncthreads();
        if (tid < 32u) {
            /* buckets from the top, the first whose end satisfies pred: lane L
             * takes buckets 255 - 8L .. 248 - 8L; an exclusive warp scan of the
             * lane totals gives each lane the sums above its buckets (exact
             * integers: the order of the additions does not matter) */
            const uint32_t lane = tid;
            uint32_t c = 0;
            unsigned long long l = 0, hh = 0;
#pragma unroll
            for (uint32_t j = 0; j < 8u; j++) {
                const uint32_t dg = 255u - 8u * lane - j;
                c += S.h.rx.cnt[dg];
                l += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                hh += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
            }
            uint32_t pc = c;
            unsigned long long pl = l, ph = hh;
            for (int o = 1; o < 32; o <<= 1) {
                const uint32_t xc = __shfl_up_sync(0xffffffffu, pc, o);
                const unsigned long long xl = __shfl_up_sync(0xffffffffu, pl, o);
                const unsigned long long xh = __shfl_up_sync(0xffffffffu, ph, o);
                if (lane >= (uint32_t)o) {
                    pc += xc;
                    pl += xl;
                    ph += xh;
                }
            }
            c = above_cnt + pc - c;          /* exclusive */
            l = above_lo + pl - l;
            hh = above_hi + ph - hh;
            /* pred at the end of each of the lane's non-empty buckets, all
             * eight evaluated (independent, so their latencies overlap); the
             * first that holds is the lane's candidate */
            uint32_t hit = 0;
            {
                uint32_t ci = c;
                unsigned long long li = l, hi_ = hh;
#pragma unroll
                for (uint32_t j = 0; j < 8u; j++) {
                    const uint32_t dg = 255u - 8u * lane - j, cj = S.h.rx.cnt[dg];
                    ci += cj;
                    li += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                    hi_ += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
                    hit |= (cj != 0u && P(ci, li, hi_)) ? 1u << j : 0u;
                }
            }
            /* pred(nq) holds (kcap or kfix <= nq): some lane finds a bucket */
            const uint32_t ball = __ballot_sync(0xffffffffu, hit != 0u);
            if (ball != 0u && lane == (uint32_t)(__ffs(ball) - 1)) {
                const uint32_t jf = (uint32_t)(__ffs(hit) - 1);
                for (uint32_t j = 0; j < jf; j++) {
                    const uint32_t dg = 255u - 8u * lane - j;
                    c += S.h.rx.cnt[dg];
                    l += chunk_mass<256u>(S.h.rx.hm, 0u, dg);
                    hh += chunk_mass<256u>(S.h.rx.hm, 3u, dg);
                }
                const uint32_t found = 255u - 8u * lane - jf;
                S.bx = found;
                S.by = c;
                S.bu = l;
                S.bu2 = hh;
                S.tcnt = S.h.rx.cnt[found];      /* at the last pass: the ties of t* */
                S.tlo = chunk_mass<256u>(S.h.rx.hm, 0u, found) / S.h.rx.cnt[found];
                S.thi = chunk_mass<256u>(S.h.rx.hm, 3u, found) / S.h.rx.cnt[found];
            }
        }
        __syncthreads();
        prefix |= S.bx << shift;
        pmask |= 255u << shift;
        above_cnt = S.by;
        above_lo = S.bu;
        above_hi = S.bu2;
        __syncthreads();
    }
    /* prefix = the key t* of the last selected block; above_* = keys > t*.
     * The ties (key == t*) have identical masses; take the least j of them
     * (lowest indices first) with pred. */
    if (tid == 0) {
        /* equal keys are equal L~, hence equal masses: per-tie lo, hi exact */
        const uint32_t ct = S.tcnt;
        const unsigned long long tl = S.tlo, th = S.thi;
        uint32_t a = 1, z = ct;      /* pred(above + ct) holds */
        while (a < z) {
            const uint32_t mid = a + (z - a) / 2u;
            if (P(above_cnt + mid, above_lo + tl * mid, above_hi + th * mid)) z = mid;
            else a = mid + 1u;
        }
        S.bx = a;
    }
    __syncthreads();
    const uint32_t jt = S.bx;
    /* ranks of the ties in index order: blocked distribution + scan */
    const uint32_t per = (nq + blockDim.x - 1u) / blockDim.x;
    const uint32_t b0 = tid * per, b1 = min(nq, b0 + per);
    uint32_t cnt = 0, rank;
    for (uint32_t b = b0; b < b1; b++) cnt += key[b] == prefix ? 1u : 0u;
    ScanU(S.t.su).ExclusiveSum(cnt, rank);
    __syncthreads();
    for (uint32_t b = b0; b < b1; b++) {
        uint8_t f = 0;
        if (key[b] > prefix) f = 1;
        else if (key[b] == prefix) f = (rank++ < jt) ? 1 : 0;
        flag[b] = f;
    }
    __syncthreads();
    return above_cnt + jt;
}

/* Thread 0's value r (a CTA reduction's result) to every thread, through
 * slot; the syncs also end the reduction's use of its temporary storage. */
template <typename T> __device__ __forceinline__ T cta_bcast(T r, T &slot)
{
    __syncthreads();
    if (threadIdx.x == 0) slot = r;
    __syncthreads();
    r = slot;
    __syncthreads();
    return r;
}

__device__ float block_max(sel_smem &S, float x)
{
    return cta_bcast(RedF(S.t.rf).Reduce(x, MaxOp()), S.bf);
}

/* e^x upward for a float x >= 0 (expf: 2 ulp [CERT-DEV-02]); +inf on overflow. */
__device__ __forceinline__ double exp_up(float x)
{
    const float e = expf(x);
    if (!isfinite(e)) return (double)INFINITY;
    return __dmul_ru((double)e, (double)EXP_UP);
}

__device__ __forceinline__ double exp_dn(float x)
{
    return __dmul_rd((double)expf(x), (double)EXP_DN);
}

/* Bucket of a full block for the fast selector: floor(16 RN(M - L~)), capped
 * at SEL_BUCKETS - 1.  Each step is monotone, so a block of greater L~ (or of
 * equal L~) never lies in a later bucket: the buckets list the blocks in the
 * order "L~ descending" up to the order inside one bucket. */
__device__ __forceinline__ uint32_t sel_bucket(float l, float m)
{
    const float x = __fmul_rn(__fsub_rn(m, l), SEL_BSCALE);
    return x < (float)(SEL_BUCKETS - 1u) ? (uint32_t)x : SEL_BUCKETS - 1u;
}

/* The selection as a bitmap of the full blocks (bit b % 32 of word b / 32; a
 * warp's 32 consecutive blocks of a walk are one word), in dynamic shared
 * memory: nq <= 65536 blocks. */
#define SEL_BITS (65536u / 32u)

/* The ordered key of a candidate v for U (S.ut, a maximum of keys from 0):
 * 0 for a NaN, which is ignored as fmaxf would (the key of a number is
 * never 0). */
__device__ __forceinline__ uint32_t ut_key(float v)
{
    return v == v ? ord_key(v) : 0u;
}

/* The fast selector [CERT-DEV-03]: the same K and the same blocks as
 * radix_select, from the scanned buckets (each thread holds its bucket's count
 * and masses, own, and their sums over buckets 0..tid, incl): the boundary
 * bucket is the first whose end satisfies pred; one walk writes the blocks of
 * the earlier buckets to the bitmap and gathers the boundary bucket's, which
 * are ranked by (key descending, index ascending) and scanned: the least count
 * inside it that satisfies pred ends the selection, and its first blocks join
 * the bitmap.  With CERT, S.ut = the maximum over the unselected full blocks
 * of RU(L~ + Delta'): the later buckets' maxima (umx, from the mass pass) and
 * the boundary bucket's unselected blocks.  Returns false when the boundary
 * bucket holds more than cap blocks (the bitmap is then incomplete). */
struct fast_sel {
    bool ok;
    uint32_t k;
};

template <bool CERT>
__device__ fast_sel fast_select(sel_smem &S, const cnt_mass &own, const cnt_mass &incl,
                                const sel_pred &P, const float *lt, const float *dp, float m,
                                const unsigned long long *lo, const unsigned long long *hi,
                                uint32_t nq, uint32_t cap, uint32_t *bits, const uint32_t *umx)
{
    const uint32_t tid = threadIdx.x, lane = tid & 31u;
    fast_sel r;
    r.ok = false;
    r.k = 0u;
    if (tid == 0) {
        S.gmin = S.pmin = 0xffffffffu;
        S.gn = S.ut = 0u;
    }
    __syncthreads();
    /* pred(nq) holds, so the last non-empty bucket's end satisfies it */
    if (own.c != 0u && P(incl.c, incl.l, incl.h)) atomicMin(&S.gmin, tid);
    __syncthreads();
    const uint32_t bs = S.gmin;
    if (bs >= SEL_BUCKETS) return r;                       /* uniform; cannot happen */
    if (tid == bs) {
        S.above.c = incl.c - own.c;
        S.above.l = incl.l - own.l;
        S.above.h = incl.h - own.h;
    }
    const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
    float lc = tid < nq ? lt[tid] : 0.0f;                  /* L~ loaded a round ahead */
    for (uint32_t rd = 0; rd < nround; rd++) {
        const uint32_t b = rd * blockDim.x + tid;
        const float lb = lc;
        if (b + blockDim.x < nq) lc = lt[b + blockDim.x];
        const uint32_t bk = b < nq ? sel_bucket(lb, m) : SEL_BUCKETS;
        const uint32_t w = __ballot_sync(0xffffffffu, bk < bs);
        if (lane == 0u) bits[b >> 5] = w;
        if (bk == bs) {
            const uint32_t slot = atomicAdd(&S.gn, 1u);
            if (slot < cap) {
                S.gkey[slot] = ord_key(lb);
                S.gidx[slot] = b;
            }
        }
    }
    __syncthreads();
    const uint32_t c = S.gn;
    if (c > cap) return r;                                 /* uniform */
    const cnt_mass above = S.above;
    if (tid < c) {
        const uint32_t ki = S.gkey[tid], bi = S.gidx[tid];
        uint32_t rank = 0;
        for (uint32_t j = 0; j < c; j++) {
            const uint32_t kj = S.gkey[j], bj = S.gidx[j];
            rank += (kj > ki || (kj == ki && bj < bi)) ? 1u : 0u;
        }
        S.gsrt[rank] = (uint16_t)tid;
    }
    __syncthreads();
    cnt_mass x, s;
    x.c = 0u;
    x.l = x.h = 0ull;
    uint32_t gb = 0;
    if (tid < c) {
        gb = S.gidx[S.gsrt[tid]];
        x.c = 1u;
        x.l = lo[gb];
        x.h = hi[gb];
    }
    cnt_mass tot;
    scan_cm(S, x, s, tot);
    if (tid < c && P(above.c + s.c, above.l + s.l, above.h + s.h)) atomicMin(&S.pmin, tid);
    __syncthreads();
    const uint32_t j = S.pmin + 1u;                         /* holds at tid = c - 1 */
    uint32_t uk = 0u;                                      /* ordered key toward U (0: none) */
    if (tid < c) {
        if (tid < j) {
            atomicOr(&bits[gb >> 5], 1u << (gb & 31u));
        } else if (CERT) {
            uk = ut_key(__fadd_ru(lt[gb], dp[gb]));
        }
    }
    if (CERT) {
        /* the later buckets' maxima and the boundary bucket's unselected
         * blocks: a maximum over the warp, then one atomic a warp (the same
         * maximum as an atomic a thread, without the contention on S.ut) */
        if (tid > bs && umx[tid] > uk) uk = umx[tid];
        uk = __reduce_max_sync(0xffffffffu, uk);
        if (lane == 0u && uk != 0u) atomicMax(&S.ut, uk);
    }
    __syncthreads();
    r.ok = true;
    r.k = above.c + j;
    return r;
}

/* The radix selector's flags (bit 0) to the bitmap, and with CERT S.ut over
 * the unselected full blocks, in one walk of the fast selector's layout. */
template <bool CERT>
__device__ void flags_to_bits(sel_smem &S, const uint8_t *flag, const float *lt, const float *dp,
                              uint32_t nq, uint32_t *bits)
{
    const uint32_t tid = threadIdx.x;
    if (tid == 0) S.ut = 0u;
    __syncthreads();
    float u = -INFINITY;
    const uint32_t nround = (nq + blockDim.x - 1u) / blockDim.x;
    for (uint32_t rd = 0; rd < nround; rd++) {
        const uint32_t b = rd * blockDim.x + tid;
        const bool sel = b < nq && (flag[b] & 1u) != 0u;
        const uint32_t w = __ballot_sync(0xffffffffu, sel);
        if ((tid & 31u) == 0u) bits[b >> 5] = w;
        if (CERT && b < nq && !sel) u = fmaxf(u, __fadd_ru(lt[b], dp[b]));
    }
    if (CERT) {
        u = warp_max(u);
        if ((tid & 31u) == 0u && u > -INFINITY) atomicMax(&S.ut, ut_key(u));
    }
    __syncthreads();
}

/* The selected blocks in index order from the bitmap: list[0 .. k), k
 * returned.  Each thread takes a run of consecutive words; a CTA scan of
 * their counts places them. */
__device__ uint32_t build_list(sel_smem &S, const uint32_t *bits, uint32_t nq, uint32_t *list)
{
    const uint32_t nw = (nq + 31u) / 32u, per = (nw + blockDim.x - 1u) / blockDim.x;
    const uint32_t w0 = min(nw, threadIdx.x * per), w1 = min(nw, w0 + per);
    uint32_t c = 0, pos, tot;
    for (uint32_t w = w0; w < w1; w++) c += (uint32_t)__popc(bits[w]);
    ScanU(S.t.su).ExclusiveSum(c, pos, tot);
    for (uint32_t w = w0; w < w1; w++) {
        for (uint32_t x = bits[w]; x != 0u; x &= x - 1u) list[pos++] = 32u * w + (uint32_t)(__ffs(x) - 1);
    }
    __syncthreads();
    return tot;
}

/* Staging of promoted values [CERT-DEV-01], the select kernel's side.  A
 * head claims a promoted block of its KV head by raising stag[b] from 0; the
 * claimer takes a pool slot (scnt) and lists (block, slot) in its claim list
 * (dynamic shared memory).  Up to `pre` claims are made as soon as a rung's
 * promotion is settled, and their values fetched from tier 2 into shared
 * memory asynchronously (cp.async) while the checks and the list proceed,
 * then written to the pool at the end; the other claims are made by the list
 * walk and copied at the end.  An early claim whose block the accepted rung
 * does not promote is harmless (its slot holds that block's values) and
 * costs only its copy: at most `pre` blocks a head. */
#define SEL_PRE_BYTES (64u * 1024u)  /* shared buffer for the early fetch */
/* SEL_PRE_DEFAULT: decode_common.cuh (the workspace's default) */
#define SEL_DYN_SMEM  ((2u * SEL_GATHER + SEL_BITS + SEL_BUCKETS) * 4u + SEL_PRE_BYTES)

struct stage_ctx {
    uint32_t *stag, *scnt;           /* the KV head's entries and slot count */
    uint32_t pool;                   /* slots of the KV head (0: staging off) */
    uint32_t *cidx, *cslot;          /* claim list: block, slot */
    uint8_t *buf;                    /* the early fetch: pre blocks of 16 x d values */
    uint32_t pre;                    /* blocks the buffer holds */
    uint32_t issued;                 /* claims fetched early so far (uniform) */
};

__device__ __forceinline__ void stage_claim(sel_smem &S, const stage_ctx &sc, uint32_t b)
{
    if (sc.pool == 0u || atomicMax(sc.stag + b, 1u) != 0u) return;
    const uint32_t slot = atomicAdd(sc.scnt, 1u);
    if (slot >= sc.pool) return;                           /* entry 1: tier 2 */
    const uint32_t i = atomicAdd(&S.nown, 1u);
    if (i >= SEL_GATHER) return;
    sc.cidx[i] = b;
    sc.cslot[i] = slot;
    atomicMax(sc.stag + b, slot + 2u);
}

/* Issues the early fetch of the claims not yet fetched that the buffer
 * holds (every thread; S.nown settled by a sync before). */
__device__ __forceinline__ void stage_issue(sel_smem &S, stage_ctx &sc, const uint16_t *tv,
                                            const kvq_cert_shape &sh)
{
    const uint32_t to = min(min(S.nown, SEL_GATHER), sc.pre);
    if (to <= sc.issued) return;
    const uint32_t per = KVQ_CERT_BLOCK * sh.dim / 8u;      /* 16-byte pieces a block */
    const uint32_t tot = (to - sc.issued) * per;
    for (uint32_t i = threadIdx.x; i < tot; i += blockDim.x) {
        const uint32_t j = sc.issued + i / per, x = i % per;
        __pipeline_memcpy_async(sc.buf + ((uint64_t)j * per + x) * 16u,
                                (const uint8_t *)(tv + kvq_cert_in_index(&sh, kvq_cert_block_first(sc.cidx[j]), 0)) +
                                    16u * x,
                                16);
    }
    __pipeline_commit();
    sc.issued = to;
}

/* The exclusive prefix of this warp's count c (one value a warp, lane 0's) and
 * the CTA's total; syncs twice. */
__device__ __forceinline__ uint32_t warp_prefix(sel_smem &S, uint32_t c, uint32_t *tot)
{
    const uint32_t warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const uint32_t lane = threadIdx.x & 31u;
    if (lane == 0u) S.wcnt[warp] = c;
    __syncthreads();
    /* lane l reads warp l's count (nw <= 32); two warp sums */
    const uint32_t x = lane < nw ? S.wcnt[lane] : 0u;
    const uint32_t pre = __reduce_add_sync(0xffffffffu, lane < warp ? x : 0u);
    *tot = __reduce_add_sync(0xffffffffu, x);
    __syncthreads();
    return pre;
}

/* Promotion [CERT-PROM-01..03] and the sums the checks need, over the
 * selected blocks list[0 .. k) in index order (thread t takes entries t, t +
 * 1024, ...: the same list gives the same sums, whichever selector made it).
 * Promotion: threshold eta > vtol nu decided exactly (the double product of
 * two binary32 values is exact), at most cap of the qualifying blocks (the
 * lowest indices first) under [CERT-PROM-02], every selected block when all
 * (rung 2); each entry is rewritten with ENT_PROM when promoted.  With CERT,
 * the accumulators (exact integer sums, maxima, binary64 sums rounded up
 * (acc) or down (vlo): valid bounds whatever the order of the reduction) are
 * reduced over the CTA; U is S.ut, which the selection left. */
struct settle_out {
    eval_acc x;
    uint32_t nprom;
};

template <bool CERT, bool PAPER>
__device__ settle_out settle(sel_smem &S, const stage_ctx &sc, uint32_t *list, uint32_t k,
                             const float *lt, const float *dp, const float *eta, const float *nu,
                             const unsigned long long *lo, const unsigned long long *hi,
                             float vtol, uint32_t cap, bool all)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t below = (1u << lane) - 1u;              /* lanes before this one */
    const bool capped = cap != 0xffffffffu;
    settle_out o;
    eval_acc &x = o.x;
    x = eval_zero();
    uint32_t np = 0, run = 0;
    for (uint32_t base = 0; base < k; base += blockDim.x) {   /* uniform */
        const uint32_t i = base + threadIdx.x;
        const bool v = i < k;
        uint32_t b = 0;
        float ltb = 0.0f, dpb = 0.0f, etab = 0.0f, nub = 0.0f;
        unsigned long long lob = 0ull, hib = 0ull;
        if (v) {
            b = list[i] & ENT_BLOCK;
            etab = eta[b];
            nub = nu[b];
            if (CERT) {
                ltb = lt[b];
                dpb = dp[b];
                lob = lo[b];
                hib = hi[b];
            }
        }
        const bool want = v && (all || (double)etab > (double)vtol * (double)nub);
        bool p = want;
        if (capped) {                                      /* ranks of the qualifying blocks */
            const uint32_t bal = __ballot_sync(0xffffffffu, want);
            uint32_t tot;
            const uint32_t pre = warp_prefix(S, (uint32_t)__popc(bal), &tot);
            p = want && run + pre + (uint32_t)__popc(bal & below) < cap;
            run += tot;
        }
        np += (uint32_t)__popc(__ballot_sync(0xffffffffu, p));
        if (v) {
            list[i] = b | (p ? ENT_PROM : 0u);
            /* at most `pre` early claim attempts a head in all: what a rung
             * the ladder leaves can waste is bounded by the buffer */
            if (p && sc.pool != 0u && atomicAdd(&S.ntry, 1u) < sc.pre) stage_claim(S, sc, b);
            if (CERT) {
                x.sl += lob;
                x.sh += hib;
                x.ksel++;
                x.lam = fmaxf(x.lam, __fsub_rd(ltb, dpb));
                if (!p) {
                    x.acc = __dadd_ru(x.acc, __dmul_ru(__ull2double_ru(hib), (double)etab));
                    x.emax = fmaxf(x.emax, etab);
                    x.vh = fmaxf(x.vh, __fadd_ru(nub, etab));   /* ||v^|| <= ||v|| + eta */
                } else {
                    x.vh = fmaxf(x.vh, nub);
                    if (PAPER) {   /* what promotion takes off the sums over all blocks */
                        x.pdn = __dadd_rd(x.pdn, __dmul_rd(__ull2double_rd(hib), (double)etab));
                        if ((double)etab > (double)vtol * (double)nub) x.nbp++;
                    }
                }
                x.vlo = __dadd_rd(x.vlo, __dmul_rd(__ull2double_rd(lob), (double)nub));
            }
        }
    }
    warp_prefix(S, np, &o.nprom);
    if (CERT) {
        /* EvalOp over the CTA: each warp's result, then warp 0 reduces the
         * warps' results and hands the total to every thread.  Only the
         * first nwa warps hold entries (thread t holds entries t, t + 1024,
         * ...); the others' x is the identity eval_zero(), which leaves every
         * component bit for bit as it is (exact integer sums, maxima, and
         * directed additions of +0 to non-negative sums), so they take no
         * part: with nwa = 1 warp 0's result is the total. */
        const uint32_t warp = threadIdx.x >> 5;
        const uint32_t nwa = min(blockDim.x >> 5, (k + 31u) >> 5);
        if (warp < nwa) x = warp_eval<PAPER>(x);
        if (nwa > 1u) {
            if (lane == 0u && warp < nwa) S.t.re[warp] = x;
            __syncthreads();
            if (warp == 0u) x = warp_eval<PAPER>(lane < nwa ? S.t.re[lane] : eval_zero());
        }
        if (threadIdx.x == 0u) S.ea = x;
        __syncthreads();
        x = S.ea;
        x.u = S.ut != 0u ? ord_val(S.ut) : -INFINITY;
    }
    return o;
}

/* The checks and claims of a settled selection (x: settle's sums; list[0 ..
 * x.ksel) the selected blocks, read by the ranking rounds when r > 1).
 * PAPER [CERT-DEV-10]: E_key of [CERT-EK-04], and E_val, the value check and
 * Vh over all blocks, from pa (the mass pass's sums over all blocks: acc =
 * sum over full blocks of hi_b eta_b, up; vlo = sum over all blocks of lo_b
 * nu_b, down; emax = max eta_b over full blocks; vh = max RU(nu_b + eta_b)
 * over full blocks and nu of the residual; ksel = the full blocks with eta_b
 * > vtol nu_b) and x's promoted part (pdn, nbp); full_lo: the full blocks' lo
 * sum. */
template <bool PAPER>
__device__ eval_out judge(sel_smem &S, const eval_acc &x, const eval_acc &pa, const uint32_t *list,
                          const float *lt, const float *dp, const float *nu, uint32_t nq,
                          uint32_t nb, const kvq_cert_params &prm, float delta1, float dmax,
                          float vmax, unsigned long long full_lo, unsigned long long full_hi,
                          unsigned long long res_lo, unsigned long long res_hi, bool threshold)
{
    const uint32_t tid = threadIdx.x;
    const unsigned long long tail_hi = full_hi - x.sh;  /* exact integers */
    const unsigned long long sel_lo = x.sl + res_lo;
    const unsigned long long sel_hi = x.sh + res_hi;
    const uint32_t ksel = x.ksel;
    const bool t_empty = ksel == nq;
    /* ranking [CERT-RANK-01]: lambda_r - delta1 > U + delta1 + eps_guard;
     * lambda_1 is the fused maximum, lambda_r (r > 1) takes r rounds of
     * (max value, lowest index) */
    const float u = x.u;
    float lam = prm.r == 1u ? x.lam : -INFINITY;
    if (prm.r > 1u) {
        float prev = INFINITY;
        uint32_t prev_idx = 0xffffffffu;
        const uint32_t r = prm.r;
        for (uint32_t it = 0; it < r && it < ksel; it++) {
            float best = -INFINITY;
            uint32_t bi = 0xffffffffu;
            for (uint32_t i = tid; i < ksel; i += blockDim.x) {
                const uint32_t b = list[i] & ENT_BLOCK;
                const float xv = __fsub_rd(lt[b], dp[b]);
                const bool after = xv < prev || (xv == prev && b > prev_idx);
                if (!after) continue;
                if (xv > best || (xv == best && b < bi)) {
                    best = xv;
                    bi = b;
                }
            }
            const float mb = block_max(S, best);
            const uint32_t cand = cta_bcast(cub::BlockReduce<uint32_t, SEL_THREADS>(S.t.rx).Reduce(
                                                (best == mb) ? bi : 0xffffffffu, MinU()),
                                            S.bx);
            prev = mb;
            prev_idx = cand;
            if (it + 1u == r) lam = mb;
        }
    }
    /* the rest is one scalar computation of uniform values: warp 0 does it
     * and hands the result over through shared memory (the other warps wait
     * at the barrier).  Its seven directed quotients form two rounds of
     * independent ones, one quotient a lane: every lane runs the same upward
     * division (a quotient rounded down is the negated upward quotient of
     * the negated numerator, RD(a/b) = -RU(-a/b), and 1/x rounded down is
     * RD(1/x) either way), so the rounds cost two divisions of latency
     * instead of seven, with the same values bit for bit.  Lanes without a
     * quotient, and special cases decided below, divide 0 by 1. */
    if (tid < 32u) {
        const uint32_t lane = tid;
        eval_out o;
        o.rank = t_empty ||
                 (__fsub_rd(lam, delta1) > __fadd_ru(__fadd_ru(u, delta1), prm.eps_guard));
        const double e2d1 = exp_up(__fmul_ru(2.0f, delta1));
        const double e2D = exp_up(__fmul_ru(2.0f, dmax));
        /* paper: the Phase-2 masses over all tokens lie within e^{2 Delta}
         * of the estimated masses (keys change in the selected blocks only,
         * by <= Delta_b), and those within e^{2 delta1} of the kernel's:
         * rho'_b <= e^{2 Delta' + 2 delta1} hi_b / total_lo, and >= its
         * inverse times lo_b / total_hi [CERT-DEV-10] */
        const double e2m = PAPER ? exp_up(__fmul_ru(2.0f, __fadd_ru(dmax, delta1))) : e2d1;
        const unsigned long long tot_lo = full_lo + res_lo, tot_hi = full_hi + res_hi;
        /* the value check holds when no unpromoted attended full block has
         * eta_b > vtol nu_b: the threshold rule for the selection (sparse);
         * over all full blocks, the promoted ones off (paper) */
        const bool within = PAPER ? pa.ksel == x.nbp : threshold;
        double npsum = 0.0;                              /* paper: sum hi_b eta_b, full, unpromoted, up */
        if (PAPER) {
            npsum = __dsub_ru(pa.acc, x.pdn);
            if (!(npsum > 0.0)) npsum = 0.0;
        }
        const double c = __dmul_rd(__dsub_rd(1.0, (double)prm.tau), exp_dn(prm.eps_guard));
        const bool bound_free = t_empty || c >= 1.0;
        float vh = x.vh;
        double vlo = x.vlo;
        if (nb > nq) {                                   /* residual: originals */
            vh = fmaxf(vh, nu[nq]);
            vlo = __dadd_rd(vlo, __dmul_rd(__ull2double_rd(res_lo), (double)nu[nq]));
        }
        /* round 1: lane 0 tail_hi / sel_lo (up), lane 1 c / (1 - c) (down),
         * lane 2 acc / sel_lo (up), lane 3 1 / e^{2 delta1} (down) */
        double num = 0.0, den = 1.0;
        if (lane == 0u && tail_hi != 0ull && sel_lo != 0ull) {
            num = __ull2double_ru(tail_hi);
            den = __ull2double_rd(sel_lo);
        } else if (lane == 1u && !bound_free) {
            num = -c;
            den = __dsub_ru(1.0, c);
        } else if (lane == 2u && (PAPER ? tot_lo : sel_lo) != 0ull) {
            num = PAPER ? npsum : x.acc;
            den = __ull2double_rd(PAPER ? tot_lo : sel_lo);
        } else if (lane == 3u && !within) {
            num = -1.0;
            den = e2m;
        }
        const double q1 = __ddiv_ru(num, den);
        const double q_tail = __shfl_sync(0xffffffffu, q1, 0);
        const double q_bnd = -__shfl_sync(0xffffffffu, q1, 1);
        const double q_acc = __shfl_sync(0xffffffffu, q1, 2);
        const double r_e2d1 = -__shfl_sync(0xffffffffu, q1, 3);
        /* alpha^_T from above: odds(alpha^) <= e^{2 delta1} tail_hi / sel_lo
         * [CERT-DEV-04]; A: odds(A) = e^{2 Delta} odds(alpha^) */
        double odds = 0.0;
        if (tail_hi != 0ull) odds = sel_lo == 0ull ? (double)INFINITY : __dmul_ru(e2d1, q_tail);
        const double oddsA = odds == 0.0 ? 0.0 : __dmul_ru(e2D, odds);
        /* round 2: lane 0 A = oddsA / (1 + oddsA), lane 1 alpha = odds /
         * (1 + odds) (both up), lane 2 the value check's right side
         * vtol sum_S rho_b nu_b from below: rho_b >= e^{-2 delta1} lo_b / sel_hi
         * (down) */
        num = 0.0;
        den = 1.0;
        if (lane == 0u && !isinf(oddsA)) {
            num = oddsA;
            den = __dadd_rd(1.0, oddsA);
        } else if (lane == 1u && !isinf(odds)) {
            num = odds;
            den = __dadd_rd(1.0, odds);
        } else if (lane == 2u && !within) {
            num = -__dmul_rd(__dmul_rd((double)prm.vtol, PAPER ? pa.vlo : vlo), r_e2d1);
            den = __ull2double_ru(PAPER ? tot_hi : sel_hi);
        }
        const double q2 = __ddiv_ru(num, den);
        double A = isinf(oddsA) ? 1.0 : __shfl_sync(0xffffffffu, q2, 0);
        if (A > 1.0) A = 1.0;
        double alpha = isinf(odds) ? 1.0 : __shfl_sync(0xffffffffu, q2, 1);
        if (alpha > 1.0) alpha = 1.0;
        const double rhs = -__shfl_sync(0xffffffffu, q2, 2);
        o.alpha = __double2float_ru(alpha);
        /* boundary [CERT-BND-01]: A <= (1 - tau) e^{eps_guard} */
        o.bound = bound_free ? true : oddsA <= q_bnd;
        /* E_key, t = tanh(Delta/2) <= Delta/2: sparse [CERT-EK-01] 2 Vmax (A +
         * t (1 - A)); paper [CERT-EK-04] 2 Vmax min(t, A (e^{2 Delta} +
         * e^{Delta} - 2) / 2) */
        {
            const double t = (double)dmax * 0.5;
            double f;
            if (PAPER) {
                const double g = __dmul_ru(__dsub_ru(__dadd_ru(e2D, exp_up(dmax)), 2.0), 0.5);
                const double a = __dmul_ru(A, g);
                f = a < t ? a : t;
            } else {
                f = __dadd_ru(A, __dmul_ru(t, __dsub_ru(1.0, A)));
            }
            o.ekey = __double2float_ru(__dmul_ru(__dmul_ru(2.0, (double)vmax), f));
            /* the paper's term [CERT-EK-02], informative, to nearest */
            const double e2 = (double)expf(2.0f * dmax);
            o.ekey_paper = (float)(2.0 * vmax * e2 * alpha * (e2 - 1.0));
        }
        /* E_val [CERT-EV-01] <= e^{2 delta1} sum_{S, not promoted} hi_b eta_b / sel_lo,
         * and <= max eta' (sum rho_b = 1) [CERT-EV-02]; paper: over all full
         * blocks, e^{2 Delta' + 2 delta1} / total_lo, and the max over all
         * full blocks (the promoted ones included: an upper bound) */
        o.vh = PAPER ? pa.vh : vh;
        const double ev = (PAPER ? tot_lo : sel_lo) == 0ull ? (double)INFINITY
                                                            : __dmul_ru(PAPER ? e2m : e2d1, q_acc);
        o.eval = fminf(__double2float_ru(ev), PAPER ? pa.emax : x.emax);
        /* [CERT-PROM-01]: with the threshold every unpromoted eta_b <= vtol nu_b */
        o.value = within ? true : (double)o.eval <= rhs;
        o.cover = cover_ok(tail_hi, sel_lo, prm.tau);
        if (tid == 0u) S.ev = o;
    }
    __syncthreads();
    return S.ev;
}

/* One CTA a query head: maxima, masses and the bucket histogram, the
 * selection (fast selector, else radix), settle and judge a rung at a time,
 * then the list.  PAPER [CERT-DEV-10]: the claims of the paper variant, the
 * group's selection masks and block list for its Phase 2, no staging. */
template <bool CERT, bool PAPER>
__global__ void __launch_bounds__(SEL_THREADS)
cert_select_kernel(kvq_cuda_cert_heads h, kvq_cuda_cert_ws ws, kvq_cert_params prm,
                   uint8_t *d_sel, uint8_t *d_prom)
{
    __shared__ sel_smem S;
    TL_SEL_AT(0);
    cudaGridDependencySynchronize();                       /* Phase 1 is done */
    TL_SEL_AT(1);
    cudaTriggerProgrammaticLaunchCompletion();
    const uint32_t qh = blockIdx.x, tid = threadIdx.x, kv = qh / h.group;
    const kvq_cert_shape sh = h.shape;
    const uint32_t nq = kvq_cert_full_blocks(&sh), nb = kvq_cert_blocks(&sh);
    const float *lt = ws.lt + (uint64_t)qh * nb, *dp = ws.dp + (uint64_t)qh * nb;
    const float *eta = h.d_eta + (uint64_t)kv * nb, *nu = h.d_nu + (uint64_t)kv * nb;
    uint32_t *key = ws.key + (uint64_t)qh * (nq ? nq : 1u);
    unsigned long long *lo = ws.lo + (uint64_t)qh * nb, *hi = ws.hi + (uint64_t)qh * nb;
    uint8_t *flag = ws.flag + (uint64_t)qh * nb;
    head_info *inf = ws.info + qh;
    extern __shared__ __align__(16) uint8_t sel_dyn[];
    stage_ctx sc;
    sc.stag = ws.stag + (uint64_t)kv * nb;
    sc.scnt = ws.scnt + kv;
    sc.pool = PAPER ? 0u : h.group * ws.stage_cap;      /* paper: Phase 2 reads tier 2 once a KV head */
    sc.cidx = (uint32_t *)sel_dyn;
    sc.cslot = sc.cidx + SEL_GATHER;
    uint32_t *bits = sc.cslot + SEL_GATHER;                 /* the selection bitmap */
    uint32_t *umx = bits + SEL_BITS;                        /* a bucket's max RU(L~ + Delta') */
    sc.buf = (uint8_t *)(umx + SEL_BUCKETS);
    sc.pre = min(ws.pre_cap, SEL_PRE_BYTES / (KVQ_CERT_BLOCK * sh.dim * 2u));
    sc.issued = 0u;
    const uint16_t *tv = h.t2_v + (uint64_t)kv * sh.tokens * sh.dim;

    /* M = max L~ (residual included) from Phase 1's maxima (0: no block had
     * a number, M = -inf as an fmaxf pass would give), then cleared for the
     * next step; the bucket counters are cleared */
    const uint32_t hm = ws.hmax[qh];
    const float m = hm != 0u ? ord_val(hm) : -INFINITY;
    S.h.fb.cnt[tid] = 0u;
#pragma unroll
    for (uint32_t k = 0; k < 6u; k++) S.h.fb.hm[k][tid] = 0u;
    umx[tid] = 0u;
    if (tid < 3u) S.mxk[tid] = ord_key(0.0f);
    if (tid == 0) S.nown = S.ntry = S.ut = 0u;
    __syncthreads();
    if (tid == 0) ws.hmax[qh] = ws.p1cnt[qh * P1CNT_STRIDE] = 0u;
    /* masses: E_b = e^{L~_b - M} within [lo, hi] 2^-40: x = RN(L~_b - M) errs
     * by <= 2^-24 |x| (factor e^{2^-24 |x|} <= 1 + 2^-23 |x| for |x| <= 2^23),
     * expf by 2 ulp (relative 2^-22, or 2^-148 absolute when subnormal); the
     * full blocks' counts and masses go to their buckets.  The same pass takes
     * Vmax [CERT-ANN-04], delta1 = max_b err_b [CERT-DEV-02] and Delta' = max
     * over full blocks [CERT-DLT-02] (non-negative: maxima of their ord_key,
     * from 0) */
    {
        const float *eb = ws.eb + (uint64_t)qh * nb;
        float vmx = 0.0f, emx = 0.0f, dmx = 0.0f;
        const uint32_t nround = (nb + blockDim.x - 1u) / blockDim.x;
        /* a round's inputs (four; paper: eta_b too) are loaded a round ahead
         * (one round trip in flight while the previous round computes) */
        constexpr uint32_t NL = PAPER ? 5u : 4u;
        float cur[NL], nxt[NL];
#pragma unroll
        for (uint32_t i = 0; i < NL; i++) cur[i] = nxt[i] = 0.0f;
        eval_acc pa = eval_zero();               /* paper: the sums over all blocks */
        auto load = [&](uint32_t b, float (&v)[NL]) {
            if (b < nb) {
                v[0] = lt[b];
                v[1] = nu[b];
                if (CERT) {
                    v[2] = eb[b];
                    if (b < nq) v[3] = dp[b];
                    if (PAPER) v[4] = eta[b];
                }
            }
        };
        load(tid, cur);
        for (uint32_t rd = 0; rd < nround; rd++) {
            const uint32_t b = rd * blockDim.x + tid;
            load(b + blockDim.x, nxt);
            uint32_t dg = 0xffffu, uk = 0u;
            unsigned long long l = 0ull, u = 1ull;
            if (b < nb) {
                const float lb = cur[0];
                vmx = fmaxf(vmx, cur[1]);
                if (CERT) {
                    emx = fmaxf(emx, cur[2]);
                    if (b < nq) dmx = fmaxf(dmx, cur[3]);
                }
                const float x = __fsub_rn(lb, m);
                const float ax = fabsf(x);
                /* x < -32: 2^40 e^x (1 + 2^-21)(1 + 2^-23 |x|) < 2^-6, so the
                 * enclosure below is [0, 1]: set directly (most blocks of a
                 * long head) */
                if (ax <= 0x1p+23f && !(x < -32.0f)) {
                    const float e = expf(x);
                    const float fu = __fadd_ru(1.0f, __fmul_ru(ax, 0x1p-23f));
                    const float fd = __fsub_rd(1.0f, __fmul_ru(ax, 0x1p-23f));
                    const float up = __fmul_ru(__fmul_ru(__fadd_ru(e, EXP_ABS), EXP_UP), fu);
                    float dn = __fmul_rd(__fmul_rd(__fsub_rd(e, EXP_ABS), EXP_DN), fd);
                    if (!(dn > 0.0f)) dn = 0.0f;
                    u = __double2ull_ru(__dmul_ru((double)up, MASS_SCALE));
                    l = __double2ull_rd(__dmul_rd((double)dn, MASS_SCALE));
                    if (u == 0ull) u = 1ull;
                }
                lo[b] = l;
                hi[b] = u;
                if (PAPER && CERT) {
                    /* the paper variant's E_val, value check and Vh take every
                     * block [CERT-DEV-10] (||v^|| <= ||v|| + eta) */
                    const float et = cur[4], nv = cur[1];
                    if (b < nq) {
                        pa.acc = __dadd_ru(pa.acc, __dmul_ru(__ull2double_ru(u), (double)et));
                        pa.emax = fmaxf(pa.emax, et);
                        pa.vh = fmaxf(pa.vh, __fadd_ru(nv, et));
                        if ((double)et > (double)prm.vtol * (double)nv) pa.ksel++;
                    } else {
                        pa.vh = fmaxf(pa.vh, nv);
                    }
                    pa.vlo = __dadd_rd(pa.vlo, __dmul_rd(__ull2double_rd(l), (double)nv));
                }
                if (b < nq) {
                    key[b] = ord_key(lb);
                    dg = sel_bucket(lb, m);
                    if (CERT) {                            /* the bucket's max RU(L~ + Delta') */
                        const float ub = __fadd_ru(lb, cur[3]);
                        uk = ut_key(ub);
                    }
                }
            }
            bucket_add<SEL_BUCKETS>(S.h.fb.cnt, S.h.fb.hm, dg, l, u, CERT ? umx : NULL, uk);
#pragma unroll
            for (uint32_t i = 0; i < NL; i++) cur[i] = nxt[i];
        }
        if (PAPER && CERT) {                       /* pa over the CTA, to S.pa */
            const uint32_t lane = tid & 31u, warp = tid >> 5;
            pa = warp_eval<false>(pa);
            if (lane == 0u) S.t.re[warp] = pa;
            __syncthreads();
            if (warp == 0u) {
                pa = warp_eval<false>(S.t.re[lane]);
                if (lane == 0u) S.pa = pa;
            }
        }
        vmx = warp_max(vmx);
        emx = warp_max(emx);
        dmx = warp_max(dmx);
        if ((tid & 31u) == 0u) {
            atomicMax(&S.mxk[0], ord_key(vmx));
            atomicMax(&S.mxk[1], ord_key(emx));
            atomicMax(&S.mxk[2], ord_key(dmx));
        }
    }
    __syncthreads();
    TL_SEL_AT(2);                                          /* masses */
    const float vmax = ord_val(S.mxk[0]), delta1 = ord_val(S.mxk[1]), dmax = ord_val(S.mxk[2]);
    /* thread t: bucket t and the sums over buckets 0..t; the total is the
     * full blocks' hi sum */
    cnt_mass own, incl, tot;
    own.c = S.h.fb.cnt[tid];
    own.l = chunk_mass<SEL_BUCKETS>(S.h.fb.hm, 0u, tid);
    own.h = chunk_mass<SEL_BUCKETS>(S.h.fb.hm, 3u, tid);
    scan_cm(S, own, incl, tot);
    __syncthreads();
    TL_SEL(3);                                             /* bucket scan */
    const unsigned long long fh = tot.h, fl = tot.l;
    const unsigned long long res_lo = nb > nq ? lo[nq] : 0ull, res_hi = nb > nq ? hi[nq] : 0ull;
    const uint32_t kmin = min(prm.kmin, nq), kcap0 = min(prm.kmax, nq);
    const bool threshold = prm.promote_budget == KVQ_CERT_PROMOTE_THRESHOLD;
    const uint32_t gcap = min(ws.gather_cap, SEL_GATHER);

    uint32_t rung = prm.start_rung, k = 0, nprom = 0, checks = 0;
    eval_out ev;
    memset(&ev, 0, sizeof ev);
    bool accepted = false;
    uint32_t k0 = 0, nsel = 0;               /* list[0 .. nsel): the selection */
    uint32_t *list = ws.list + (uint64_t)qh * nb;
    sel_pred P;
    P.full_hi = fh;
    P.res_lo = res_lo;
    P.tau = prm.tau;
    /* a selection to the bitmap (fast selector, else radix), then to the list */
    auto select_k = [&]() -> uint32_t {
        const fast_sel f = fast_select<CERT>(S, own, incl, P, lt, dp, m, lo, hi, nq, gcap, bits, umx);
        uint32_t kk = f.k;
        if (!f.ok) {
            kk = radix_select(S, key, lo, hi, nq, P, flag);
            flags_to_bits<CERT>(S, flag, lt, dp, nq, bits);
        }
        nsel = build_list(S, bits, nq, list);
        return kk;
    };
    if (rung <= 2u && nq > 0u) {
        P.mode = 0u;                                    /* [CERT-SEL-01/02] */
        P.kmin = kmin;
        P.kcap = kcap0;
        P.kfix = 0u;
        k0 = select_k();
    }
    TL_SEL(4);                                             /* rung 0's selection */
    for (; rung <= 2u && !accepted; rung++) {
        if (nq == 0u) {                                   /* S = {residual} */
            k = 0;
        } else if (rung == 0u) {
            k = k0;
        } else {
            const uint32_t k1 = min(2u * k0, nq);          /* [CERT-SEL-01] rung 1 */
            if (k1 != k) {
                P.mode = 1u;
                P.kfix = k1;
                P.kmin = P.kcap = 0u;
                k = select_k();
            }
        }
        const settle_out so =
            settle<CERT, PAPER>(S, sc, list, nsel, lt, dp, eta, nu, lo, hi, prm.vtol,
                         threshold || rung == 2u ? 0xffffffffu : prm.promote_budget, rung == 2u);
        nprom = so.nprom;
        stage_issue(S, sc, tv, sh);                        /* this rung's claims */
        TL_SEL(5);                                         /* settled (the last rung's) */
        if (!CERT) {
            accepted = true;
            break;
        }
        ev = judge<PAPER>(S, so.x, S.pa, list, lt, dp, nu, nq, nb, prm, delta1, dmax, vmax, fl, fh,
                          res_lo, res_hi, threshold || rung == 2u);
        TL_SEL(6);                                         /* judged (the last rung's) */
        if (!PAPER && rung == 2u) ev.eval = 0.0f;           /* [CERT-PROM-03]; paper: the tail's stays */
        checks = (ev.rank ? KVQ_CERT_CHECK_RANK : 0u) | (ev.bound ? KVQ_CERT_CHECK_BOUNDARY : 0u) |
                 (ev.value ? KVQ_CERT_CHECK_VALUE : 0u) | (ev.cover ? KVQ_CERT_CHECK_COVERAGE : 0u);
        accepted = ev.rank && ev.bound && ev.value;        /* [CERT-LAD-02] */
        if (accepted) break;
    }
    TL_SEL(7);                                             /* ladder decided */
    const bool dense = !accepted;                           /* rung 3 [CERT-LAD-01] */
    if (dense) {
        rung = prm.start_rung > 3u ? prm.start_rung : 3u;
        k = nq;
        nprom = 0;
        checks = 0;
    }
    /* outputs: the list (rung 3: every block; else settle's entries, then
     * the residual block), the flags when asked for; a promoted block not yet
     * claimed is claimed now (copied at the end) */
    uint32_t tent;
    if (dense) {
        for (uint32_t b = tid; b < nb; b += blockDim.x) {
            list[b] = b | ENT_DENSE | (b >= nq ? ENT_RES : 0u);
            if (d_sel) d_sel[(uint64_t)qh * nb + b] = 1u;
            if (d_prom) d_prom[(uint64_t)qh * nb + b] = 0u;
        }
        tent = nb;
    } else {
        if (tid == 0 && nb > nq) list[nsel] = nq | ENT_RES;
        tent = nsel + (nb > nq ? 1u : 0u);
        if (d_sel || d_prom) {
            for (uint32_t b = tid; b < nb; b += blockDim.x) {
                if (d_sel) d_sel[(uint64_t)qh * nb + b] = b >= nq ? 1u : 0u;
                if (d_prom) d_prom[(uint64_t)qh * nb + b] = 0u;
            }
            __syncthreads();                               /* then the selected blocks' */
        }
        for (uint32_t i = tid; i < nsel; i += blockDim.x) {
            const uint32_t e = list[i], b = e & ENT_BLOCK;
            if (e & ENT_PROM) stage_claim(S, sc, b);
            if (d_sel) d_sel[(uint64_t)qh * nb + b] = 1u;
            if (d_prom) d_prom[(uint64_t)qh * nb + b] = (e & ENT_PROM) ? 1u : 0u;
        }
    }
    if (PAPER) {
        /* the group's masks and block list for the paper variant's Phase 2
         * [CERT-DEV-10]: this head's bit on its selected blocks, and on the
         * blocks whose original values it reads (promoted; every block at
         * rung 3); a block's first head lists it */
        const uint32_t g = qh - kv * h.group, bit = 1u << g, cnt = dense ? nq : nsel;
        const uint32_t npass = (h.group + 3u) / 4u, pnib = 15u << (4u * (g / 4u));
        uint32_t *selm = ws.selm + (uint64_t)kv * nb, *promm = ws.promm + (uint64_t)kv * nb;
        uint32_t *segm = ws.segm + (uint64_t)kv * ws.nseg;
        for (uint32_t i = tid; i < cnt; i += blockDim.x) {
            const uint32_t e = dense ? i : list[i], b = e & ENT_BLOCK;
            if (dense || (e & ENT_PROM)) atomicOr(promm + b, bit);
            if (atomicOr(selm + b, bit) == 0u) {
                ws.kvlist[(uint64_t)kv * nb + atomicAdd(ws.kvn + kv, 1u)] = b;
                ws.post[atomicAdd(ws.p2task + P2T_NPOST, 1u)] = kv * nb + b;
            }
            /* the early segment pass: the first head of its pass to select a
             * block of segment s has the segment recomputed for the pass */
            if (ws.overlap && b < nq) {
                const uint32_t s = b / SEG_BLOCKS;
                if ((atomicOr(segm + s, bit) & pnib) == 0u)
                    ws.post[P2Q_CAP(ws) - 1u - atomicAdd(ws.p2task + P2T_NREC, 1u)] =
                        P2Q_REC | ((kv * ws.nseg + s) * npass + g / 4u);
            }
        }
    }
    TL_SEL(8);                                             /* list written */
    /* the claimed blocks' values to the pool: the early fetch from shared
     * memory once every thread's copies have landed; the later claims (the
     * list's) from tier 2, eight 8-byte pieces a thread in flight at a time
     * (the reads cross the host link) */
    __pipeline_wait_prior(0);
    __syncthreads();
    {
        const uint32_t nown = min(S.nown, SEL_GATHER), per = KVQ_CERT_BLOCK * sh.dim / 4u;
        uint16_t *pz = ws.stage + (uint64_t)kv * sc.pool * KVQ_CERT_BLOCK * sh.dim;
        const uint32_t per16 = per / 2u;
        for (uint32_t i = tid; i < sc.issued * per16; i += blockDim.x) {
            const uint32_t j = i / per16, x = i % per16;
            ((uint4 *)(pz + (uint64_t)sc.cslot[j] * KVQ_CERT_BLOCK * sh.dim))[x] =
                ((const uint4 *)(sc.buf + (uint64_t)j * per16 * 16u))[x];
        }
        const uint32_t tot = (nown - sc.issued) * per;
        for (uint32_t i0 = tid; i0 < tot; i0 += 8u * blockDim.x) {
            uint2 v[8];
#pragma unroll
            for (uint32_t k8 = 0; k8 < 8u; k8++) {
                const uint32_t i = i0 + k8 * blockDim.x, j = sc.issued + i / per;
                if (i < tot)
                    v[k8] = ((const uint2 *)(tv + kvq_cert_in_index(&sh, kvq_cert_block_first(sc.cidx[j]), 0)))[i % per];
            }
#pragma unroll
            for (uint32_t k8 = 0; k8 < 8u; k8++) {
                const uint32_t i = i0 + k8 * blockDim.x, j = sc.issued + i / per;
                if (i < tot)
                    ((uint2 *)(pz + (uint64_t)sc.cslot[j] * KVQ_CERT_BLOCK * sh.dim))[i % per] = v[k8];
            }
        }
    }
    TL_SEL(9);                                             /* list written, values staged */
    if (tid == 0) {
        head_info I;
        memset(&I, 0, sizeof I);
        I.rung = rung;
        I.k_sel = k;
        I.n_prom = nprom;
        I.checks = checks;
        I.nent = tent;
        I.ntok = PAPER ? sh.tokens                          /* paper: every token */
                       : k * KVQ_CERT_BLOCK + (nb > nq ? kvq_cert_residual_tokens(&sh) : 0u);
        I.status = (rung >= 4u) ? KVQ_CUDA_CERT_RUNG4 : (uint32_t)KVQ_OK;
        I.delta = dmax;
        I.vmax = vmax;
        I.delta1 = delta1;
        if (!dense) {
            I.alpha_hat = ev.alpha;
            I.ekey = ev.ekey;
            I.ekey_paper = ev.ekey_paper;
            I.eval = ev.eval;
            I.vh = ev.vh;
        } else {
            I.vh = vmax;                                    /* originals [CERT-LAD-03] */
        }
        *inf = I;
    }
    if (PAPER) {
        /* this CTA's writes are done: the paper variant's Phase 2 may take
         * the work that waits for the selection [CERT-DEV-10] */
        __threadfence();
        __syncthreads();
        if (tid == 0) atomicAdd(ws.p2task + P2T_SELDONE, 1u);
    }
    TL_SEL_AT(10);
}

/* ---- host side ----------------------------------------------------------- */

/* dynamic shared memory beyond the default 48 KiB: the claim list and the
 * early-fetch buffer */
cudaError_t cert_select_attrs(void)
{
    const void *const k[] = {(const void *)cert_select_kernel<true, false>,
                             (const void *)cert_select_kernel<false, false>,
                             (const void *)cert_select_kernel<true, true>,
                             (const void *)cert_select_kernel<false, true>};
    cudaError_t e = cudaSuccess;
    for (size_t i = 0; i < sizeof k / sizeof k[0] && e == cudaSuccess; i++)
        e = cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)SEL_DYN_SMEM);
    return e;
}

/* A programmatic dependent of Phase 1 (it waits for it at its start). */
cudaError_t cert_select_launch(bool cert, uint32_t qh, cudaStream_t stream,
                               const kvq_cuda_cert_heads &h, const kvq_cuda_cert_ws &w,
                               const kvq_cert_params &prm, uint8_t *d_sel, uint8_t *d_prom)
{
    auto *k = prm.variant == KVQ_CERT_VARIANT_PAPER
                  ? (cert ? cert_select_kernel<true, true> : cert_select_kernel<false, true>)
                  : (cert ? cert_select_kernel<true, false> : cert_select_kernel<false, false>);
    return launch_dep(k, dim3(qh), dim3(SEL_THREADS), (size_t)SEL_DYN_SMEM, stream, h, w, prm,
                      d_sel, d_prom);
}

#ifdef KVQ_CERT_TIMELINE
cudaError_t cert_select_tl(unsigned long long *out, const unsigned long long *in)
{
    cudaError_t e = cudaSuccess;
    if (out != NULL) e = cudaMemcpyFromSymbol(out, tl_sel, sizeof tl_sel);
    if (e == cudaSuccess && in != NULL) e = cudaMemcpyToSymbol(tl_sel, in, sizeof tl_sel);
    return e;
}
#endif
