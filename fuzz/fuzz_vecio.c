/*
 * fuzz_vecio.c -- libFuzzer harness for the vector and results readers.
 *
 * Any byte string must be either accepted or rejected with KVQ_E_FORMAT (or
 * KVQ_E_NOMEM) and a message naming the input; never a crash, a leak or an
 * out-of-bounds access.  An accepted vector file must survive a write/parse
 * round trip to the same bytes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kvq_vfile vf;
    kvq_rfile rf;
    char err[512];
    kvq_status st = kvq_vec_parse(&vf, (const char *)data, size, "fuzz", err, sizeof err);
    if (st == KVQ_OK) {
        char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        kvq_vfile back;
        FILE *f = open_memstream(&a, &la);
        kvq_vec_write(f, &vf); /* with its end line [VEC-FMT-07] */
        fclose(f);
        if (kvq_vec_parse(&back, a, la, "fuzz-rt", err, sizeof err) != KVQ_OK) abort();
        f = open_memstream(&b, &lb);
        kvq_vec_write(f, &back);
        fclose(f);
        if (la != lb || memcmp(a, b, la) != 0) abort();
        kvq_vfile_free(&back);
        kvq_vfile_free(&vf);
        free(a);
        free(b);
    } else if (st != KVQ_E_FORMAT && st != KVQ_E_NOMEM) {
        abort();
    } else if (strncmp(err, "fuzz", 4) != 0) {
        abort(); /* every message names the input */
    }
    st = kvq_res_parse(&rf, (const char *)data, size, "fuzz", err, sizeof err);
    if (st == KVQ_OK) kvq_rfile_free(&rf);
    else if (st != KVQ_E_FORMAT && st != KVQ_E_NOMEM) abort();
    return 0;
}
