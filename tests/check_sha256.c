/*
 * check_sha256.c -- Check suite for SHA-256 (conformance/sha256.c), the digest
 * every report records of the vector file, the subject and the results file
 * (spec/verify.md [VER-REP-05]).
 *
 * Known answers: the FIPS 180-4 examples (NIST's "SHA256.pdf": "abc" and the
 * 448-bit two-block message), the 896-bit message and one million 'a' of
 * FIPS 180-2 appendix B, the empty message, and runs of 'a' on both sides of
 * the padding's boundaries (55, 63, 64, 119, 120 bytes; the digests of
 * coreutils' sha256sum).  Then the streaming interface:
 * every split of a message into two updates, and byte-at-a-time, give the
 * one-shot digest (each length around the 55/56/64-byte padding boundaries);
 * a file hashes as its bytes do.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "conf.h"

static uint64_t seed = 0x6b7671u, ncases = 0u; /* no random cases: printed for the common main */

static void expect_hex(const char *msg, size_t len, const char *want)
{
    char hex[65];
    kvq_sha256_hex(msg, len, hex);
    ck_assert_msg(strcmp(hex, want) == 0, "SHA-256 of %zu bytes: got %s, want %s", len, hex, want);
}

/* SPEC: [VER-REP-05] */
START_TEST(known_answers)
{
    char *million = xmalloc(1000000);
    expect_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
               "mnopqrstnopqrstu", 112, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    memset(million, 'a', 1000000);
    /* one block of padding or two: 55 bytes leave room for the length, 56..63 do not */
    expect_hex(million, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    expect_hex(million, 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
    expect_hex(million, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    expect_hex(million, 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
    expect_hex(million, 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");
    expect_hex(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}
END_TEST

/* A planted slip in the padding or the buffering shows here: every split
 * point and every length up to three blocks. */
START_TEST(streaming_equals_one_shot)
{
    unsigned char msg[200];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (unsigned char)(i * 131u + 7u);
    for (size_t len = 0; len <= sizeof msg; len++) {
        char one[65], two[65], bytes[65];
        kvq_sha256 s;
        kvq_sha256_hex(msg, len, one);
        for (size_t cut = 0; cut <= len; cut++) {
            kvq_sha256_init(&s);
            kvq_sha256_update(&s, msg, cut);
            kvq_sha256_update(&s, msg + cut, len - cut);
            kvq_sha256_final(&s, two);
            REQ_MSG(strcmp(one, two) == 0, "length %zu split at %zu: %s vs %s", len, cut, two, one);
        }
        kvq_sha256_init(&s);
        for (size_t i = 0; i < len; i++) kvq_sha256_update(&s, msg + i, 1);
        kvq_sha256_final(&s, bytes);
        REQ_MSG(strcmp(one, bytes) == 0, "length %zu byte at a time: %s vs %s", len, bytes, one);
    }
}
END_TEST

START_TEST(file_digest)
{
    char path[] = "/tmp/kvq-check-sha256.XXXXXX", hex[65], err[256];
    int fd = mkstemp(path);
    FILE *f;
    char *big = xmalloc(200000);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "wb");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < 200000; i++) big[i] = (char)('a' + i % 26);
    ck_assert_uint_eq(fwrite(big, 1, 200000, f), 200000); /* more than one read of the file */
    fclose(f);
    ck_assert_int_eq(kvq_sha256_file(path, hex, err, sizeof err), KVQ_OK);
    {
        char want[65];
        kvq_sha256_hex(big, 200000, want);
        ck_assert_str_eq(hex, want);
    }
    remove(path);
    ck_assert_int_eq(kvq_sha256_file(path, hex, err, sizeof err), KVQ_E_IO); /* named, with why */
    ck_assert_ptr_nonnull(strstr(err, path));
    free(big);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sha256");
    TCase *t = tcase_create("known_answers");
    tcase_add_test(t, known_answers);
    suite_add_tcase(s, t);
    t = tcase_create("streaming");
    tcase_add_test(t, streaming_equals_one_shot);
    tcase_add_test(t, file_digest);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return kvq_check_main("check_sha256", suite(), &seed, &ncases);
}
