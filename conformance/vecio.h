/*
 * vecio.h -- conformance vector and results files (spec/vectors.md), read and
 * written from the operations' field schemas (registry.h).
 *
 * Text, one case per line, versioned header, hex for every bit pattern.  Every
 * reader error names the file, the line and what is wrong.
 */
#ifndef KVQ_VECIO_H
#define KVQ_VECIO_H

#include <stdio.h>
#include <stdint.h>

#include "kvq.h"
#include "registry.h"

#define KVQ_VEC_VERSION 1u
#define KVQ_VEC_MAGIC "kvq-vectors"
#define KVQ_RES_MAGIC "kvq-results"

typedef struct kvq_vfile {
    uint32_t version;
    const kvq_family *family;
    char levels[32];        /* "smoke" | "standard" */
    uint64_t seed;
    char generator[64];
    kvq_case *cases;
    size_t ncases;
    int trailer;            /* read: the file ended with its `end` line [VEC-FMT-07] */
} kvq_vfile;

/* One field of a result line, as text: decoded against its case's operation
 * (the results file names no operation and repeats no shape). */
typedef struct kvq_rfield {
    char *key, *value;
} kvq_rfield;

typedef struct kvq_rcase {
    char id[KVQ_ID_MAX];
    long line;
    int status;                       /* -1 when skipped */
    char *skipped;                    /* non-NULL: the subject has no entry for the op */
    char *touched;                    /* non-NULL: an error status, and the runner found this
                                         output (or `flags`) written [VEC-RES-03] */
    kvq_rfield *fields;               /* every field but id, status and skipped */
    size_t nfields;
} kvq_rcase;

typedef struct kvq_rfile {
    uint32_t version;
    char subject[64];
    char unavailable[256]; /* non-empty: the subject could not run here (SKIPPED) */
    kvq_rcase *cases;
    size_t ncases;
} kvq_rfile;

/* Readers: KVQ_OK, or KVQ_E_IO / KVQ_E_FORMAT / KVQ_E_NOMEM with a message
 * "path:line: what" in err.  On error *vf is left empty. */
kvq_status kvq_vec_read(kvq_vfile *vf, const char *path, char *err, size_t errlen);
kvq_status kvq_res_read(kvq_rfile *rf, const char *path, char *err, size_t errlen);
/* Parse from an in-memory buffer (name used in messages). */
kvq_status kvq_vec_parse(kvq_vfile *vf, const char *buf, size_t len, const char *name,
                         char *err, size_t errlen);
kvq_status kvq_res_parse(kvq_rfile *rf, const char *buf, size_t len, const char *name,
                         char *err, size_t errlen);

/* Decode a status-0 result against its case's operation: *out gets a new
 * output struct (free with kvq_out_free), *flags the flags word (0 when the
 * operation has none).  Errors name the results file, the line, the
 * operation and the key. */
kvq_status kvq_res_decode(void **out, uint32_t *flags, const kvq_rcase *r, const kvq_case *c,
                          const char *path, char *err, size_t errlen);
/* A new output struct for c with every array allocated to its count and
 * every byte of it and of the struct set to the sentinel 0xA5. */
void *kvq_out_sentinel(const kvq_case *c);
void kvq_out_free(const kvq_op *op, void *out);

/* Writers (to a stream).  kvq_vec_write: a whole vector file, the header,
 * every case and the `end` line [VEC-FMT-07]. */
kvq_status kvq_vec_write(FILE *f, const kvq_vfile *vf);
kvq_status kvq_vec_write_header(FILE *f, const kvq_vfile *vf);
kvq_status kvq_vec_write_case(FILE *f, const kvq_case *c);
kvq_status kvq_res_write_header(FILE *f, const char *subject, const char *unavailable);
/* A result: the output fields of c's operation when status is 0 (binary16
 * metadata with no binary16 encoding is written `invalid` [VEC-RES-02]). */
kvq_status kvq_res_write(FILE *f, const kvq_case *c, int status, uint32_t flags, const void *out);
/* A skipped case: the subject has no entry point for its operation
 * [VEC-CERT-06]; reason is one token (no blanks). */
kvq_status kvq_res_write_skip(FILE *f, const char *id, const char *reason);
/* An error status after which the runner found an output written:
 * `result id=.. status=S touched=<key>` [VEC-RES-03]. */
kvq_status kvq_res_write_touched(FILE *f, const kvq_case *c, int status, const char *touched);
/* The first output of a sentinel-filled struct (kvq_out_sentinel) that no
 * longer holds the sentinel, "flags" for a nonzero flags word, or NULL. */
const char *kvq_out_touched(const kvq_case *c, const void *out, uint32_t flags);
/* Fill an output array with the sentinel again: for an operation of several
 * calls, the outputs of a call that succeeded before a later one failed
 * (only the failing call must have written nothing). */
void kvq_out_refill(const kvq_case *c, void *out, const char *key);

/* UTF-8: the length of the valid sequence at s (0: none starts there); a copy
 * into n bytes that never ends in half a character [VER-REP-03]. */
size_t kvq_utf8_seq(const unsigned char *s);
void kvq_copy_utf8(char *dst, size_t n, const char *src);

void kvq_vfile_free(kvq_vfile *vf);
void kvq_rcase_free(kvq_rcase *r);
void kvq_rfile_free(kvq_rfile *rf);

#endif /* KVQ_VECIO_H */
