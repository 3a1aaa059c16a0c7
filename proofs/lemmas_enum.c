/*
 * lemmas_enum.c -- proof by exhaustive enumeration of the byte-field lemmas of
 * include/kvq_layout.h that Z3/CVC4 do not close (kvq_field_set_byte,
 * kvq_field_set_get, kvq_field_set_keep, kvq_code_shift_aligned).
 *
 * Each lemma quantifies over a finite domain: a byte value y in [0, 256), a
 * width b in {1, 2, 4, 8}, field positions k, k2 in [0, 8) with k % b == 0, and
 * a code c in [0, 2^b); for kvq_code_shift_aligned an element index
 * i in [0, KVQ_MAX_GROUP = 4096).  The functions below transcribe the ACSL logic
 * definitions (kvq_pow2_l, kvq_field_l, kvq_field_set_l) literally, in
 * mathematical integers (int64_t never overflows here), so checking every
 * point of the domain decides each lemma.  proofs/run.sh compiles and runs
 * this file on every proof run; see proofs/TRUSTED.md [TR-LEMMA-ENUM].
 *
 * The same for the lemmas of include/kvq_fp8.h: the shift, mask and | facts
 * the FP8 encoder's proof uses (kvq_fp8_shl1, kvq_fp8_shr, kvq_fp8_mask,
 * kvq_flags_or_sat: C's operators on non-negative integers are ACSL's, so
 * each is checked on its whole domain: k <= 31; x < 2^24 with k <= 24; every
 * 32-bit flags word) and the binary16 overflow thresholds (kvq_h_e4m3_ovf,
 * kvq_h_e5m2_ovf: every binary16 encoding h with E < 31; the value
 * (1024 + F) 2^E 2^-25 or F 2^-24 is exact in binary64).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int64_t pow2_l(int64_t k)
{
    return k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
           k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256;
}
/* ACSL / and % on integers truncate toward zero like C; all operands here are >= 0. */
static int64_t field_l(int64_t y, int64_t k, int64_t b) { return (y / pow2_l(k)) % pow2_l(b); }
static int64_t field_set_l(int64_t y, int64_t k, int64_t b, int64_t c)
{
    return y - field_l(y, k, b) * pow2_l(k) + c * pow2_l(k);
}
static int field_at(int64_t k, int64_t b) { return 0 <= k && k < 8 && k % b == 0; }

/* kvq_fp8.h: kvq_fp8_pow2_l, kvq_flags_sat_l and the binary16 fields and value. */
static int64_t fp8_pow2_l(int64_t k)
{
    return k <= 8 ? pow2_l(k) : k <= 16 ? 256 * pow2_l(k - 8) :
           k <= 24 ? 65536 * pow2_l(k - 16) : 16777216 * pow2_l(k - 24);
}
static int64_t flags_sat_l(int64_t f) { return (f / 4) % 2 == 1 ? f : f + 4; }
static int64_t h_sign_l(int64_t h) { return h / 32768; }
static int64_t h_exp_l(int64_t h) { return (h / 1024) % 32; }
static int64_t h_frac_l(int64_t h) { return h % 1024; }
static double h_value_l(int64_t h)  /* exact: at most 11 significant bits */
{
    return (h_sign_l(h) == 1 ? -1.0 : 1.0) *
           (h_exp_l(h) == 0 ? (double)h_frac_l(h) * 0x1p-24
                            : (double)((1024 + h_frac_l(h)) * fp8_pow2_l(h_exp_l(h))) * 0x1p-25);
}

/* The FP8 lemmas; returns the number of failures, adds the cases to *cases. */
static long fp8_lemmas(long *cases)
{
    long bad = 0;
    for (int64_t k = 0; k <= 31; k++) {
        (*cases)++;
        if (((int64_t)1 << k) != fp8_pow2_l(k)) { bad++; printf("kvq_fp8_shl1 k=%lld\n", (long long)k); }
    }
    for (int64_t k = 0; k <= 24; k++) {
        int64_t p = fp8_pow2_l(k);
        for (int64_t x = 0; x < 16777216; x++) {
            if ((x >> k) != x / p) { bad++; printf("kvq_fp8_shr x=%lld k=%lld\n", (long long)x, (long long)k); }
            if ((x & (p - 1)) != x % p) { bad++; printf("kvq_fp8_mask x=%lld k=%lld\n", (long long)x, (long long)k); }
        }
        *cases += 2 * 16777216L;
    }
    for (int64_t f = 0; f <= 4294967295LL; f++)
        if ((f | 4) != flags_sat_l(f)) { bad++; printf("kvq_flags_or_sat f=%lld\n", (long long)f); }
    *cases += 4294967296L;
    for (int64_t h = 0; h < 65536; h++) {
        int64_t e = h_exp_l(h), fr = h_frac_l(h);
        double v = h_value_l(h), a = v < 0 ? -v : v;
        if (e >= 31) continue;
        *cases += 2;
        if ((a > 464) != (e > 23 || (e == 23 && fr > 832))) { bad++; printf("kvq_h_e4m3_ovf h=%lld\n", (long long)h); }
        if ((a >= 61440) != (e == 30 && fr >= 896)) { bad++; printf("kvq_h_e5m2_ovf h=%lld\n", (long long)h); }
    }
    return bad;
}

/* floor_split's goal `frac` (ref/fast/kivi.c, TRUSTED.md [TR-GOAL-FLOOR-FRAC]):
 * for every binary32 q in [0, 2^31), the binary32 difference q - floor(q) is
 * exact.  floor(q) is the integer part (q >= 0), and binary64 holds q and
 * q - floor(q) exactly (24 significant bits, |q| < 2^31). */
static long floor_frac(long *cases)
{
    long bad = 0;
    for (uint32_t u = 0; u < 0x4F000000u; u++) {    /* 0x4F000000 is 2^31 */
        float q, fl, d;
        memcpy(&q, &u, sizeof q);
        fl = (float)(int64_t)q;
        d = q - fl;
        (*cases)++;
        if ((double)d != (double)q - (double)(int64_t)q && bad++ < 8) printf("floor_split frac q=%a\n", (double)q);
    }
    return bad;
}

int main(void)
{
    static const int64_t widths[4] = {1, 2, 4, 8};
    long cases = 0, bad = 0;
    for (int wi = 0; wi < 4; wi++) {
        int64_t b = widths[wi];
        for (int64_t k = 0; k < 8; k++) {
            if (!field_at(k, b)) continue;
            for (int64_t y = 0; y < 256; y++)
                for (int64_t c = 0; c < pow2_l(b); c++) {
                    int64_t n = field_set_l(y, k, b, c);
                    cases++;
                    if (!(0 <= n && n < 256)) { bad++; printf("kvq_field_set_byte y=%lld k=%lld b=%lld c=%lld\n", (long long)y, (long long)k, (long long)b, (long long)c); }
                    if (field_l(n, k, b) != c) { bad++; printf("kvq_field_set_get y=%lld k=%lld b=%lld c=%lld\n", (long long)y, (long long)k, (long long)b, (long long)c); }
                    for (int64_t k2 = 0; k2 < 8; k2++) {
                        if (!field_at(k2, b) || k2 == k) continue;
                        cases++;
                        if (field_l(n, k2, b) != field_l(y, k2, b)) { bad++; printf("kvq_field_set_keep y=%lld k=%lld k2=%lld b=%lld c=%lld\n", (long long)y, (long long)k, (long long)k2, (long long)b, (long long)c); }
                    }
                }
        }
    }
    /* kvq_code_shift_aligned: kvq_field_at((i*b) % 8, b) for 0 <= i < 4096. */
    for (int wi = 0; wi < 4; wi++) {
        int64_t b = widths[wi];
        for (int64_t i = 0; i < 4096; i++) {
            cases++;
            if (!field_at((i * b) % 8, b)) { bad++; printf("kvq_code_shift_aligned i=%lld b=%lld\n", (long long)i, (long long)b); }
        }
    }
    printf("lemmas_enum: kvq_field_set_byte, kvq_field_set_get, kvq_field_set_keep, kvq_code_shift_aligned: %ld cases, %ld failures\n", cases, bad);
    {
        long fcases = 0, fbad = fp8_lemmas(&fcases);
        printf("lemmas_enum: kvq_fp8_shl1, kvq_fp8_shr, kvq_fp8_mask, kvq_flags_or_sat, kvq_h_e4m3_ovf, kvq_h_e5m2_ovf: %ld cases, %ld failures\n", fcases, fbad);
        bad += fbad;
    }
    {
        long ccases = 0, cbad = floor_frac(&ccases);
        printf("lemmas_enum: floor_split frac (binary32 q - floor(q) exact, 0 <= q < 2^31): %ld cases, %ld failures\n", ccases, cbad);
        bad += cbad;
    }
    {
        /* code_float (ref/fast/kivi.c): (float)c == c for every code c <= 255,
         * the dequantizer's int-to-float step [TR-GOAL-CODE-CAST] */
        long kcases = 0, kbad = 0;
        for (uint32_t c = 0; c <= 255u; c++) {
            volatile uint32_t vc = c;
            float f = (float)vc;
            kcases++;
            if ((double)f != (double)c && kbad++ < 8) printf("code_float c=%u\n", (unsigned)c);
        }
        printf("lemmas_enum: code_float exact ((float)c == c, 0 <= c <= 255): %ld cases, %ld failures\n", kcases, kbad);
        bad += kbad;
    }
    return bad != 0;
}
