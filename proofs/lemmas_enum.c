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
 */
#include <stdint.h>
#include <stdio.h>

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
    return bad != 0;
}
