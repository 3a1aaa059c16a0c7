/*
 * fuzz_certdump.c -- libFuzzer harness for the `kvq cert` dump reader.
 *
 * FUZZ-SOURCES: conformance/families/cert_dump.c
 * SPEC: [CERT-DUMP-01] [CERT-DUMP-04]
 * Any byte string must be either accepted or rejected with KVQ_E_FORMAT (or
 * KVQ_E_NOMEM) and a message naming the input; never a crash, a leak or an
 * out-of-bounds access.  An accepted dump must survive a write/parse round
 * trip to the same bytes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/cert_dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *write_mem(const kvq_cert_dump *dp, size_t *len)
{
    char *a = NULL;
    FILE *f = open_memstream(&a, len);
    if (f == NULL) abort();
    if (kvq_cert_dump_write(f, dp) != KVQ_OK) abort(); /* every accepted value is encodable */
    fclose(f);
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kvq_cert_dump dp, back;
    char err[512];
    kvq_status st = kvq_cert_dump_parse(&dp, (const char *)data, size, "fuzz", err, sizeof err);
    if (st == KVQ_OK) {
        size_t la = 0, lb = 0;
        char *a = write_mem(&dp, &la), *b;
        if (kvq_cert_dump_parse(&back, a, la, "fuzz-rt", err, sizeof err) != KVQ_OK) abort();
        b = write_mem(&back, &lb);
        if (la != lb || memcmp(a, b, la) != 0) abort();
        kvq_cert_dump_free(&back);
        kvq_cert_dump_free(&dp);
        free(a);
        free(b);
    } else if (st != KVQ_E_FORMAT && st != KVQ_E_NOMEM) {
        abort();
    } else if (strncmp(err, "fuzz", 4) != 0) {
        abort(); /* every message names the input */
    }
    return 0;
}
