/*
 * certdump.h -- the `kvq cert` dump of one decode step (spec/cert.md,
 * [CERT-DUMP-01..04]): a strict reader and a writer.
 */
#ifndef KVQ_CERTDUMP_H
#define KVQ_CERTDUMP_H

#include <stdio.h>
#include <stdint.h>

#include "kvq.h"

#define KVQ_CERT_DUMP_MAGIC "kvq-cert-dump"
#define KVQ_CERT_DUMP_VERSION 2u     /* written; versions 1 (sparse steps) and 2 are read */

enum { KVQ_PROMOTE_THRESHOLD = 0, KVQ_PROMOTE_BUDGET = 1 }; /* [CERT-PROM-01/02] */
enum { KVQ_SCORING_FP = 0, KVQ_SCORING_INT8 = 1 };          /* [CERT-LM-03] */

/* One dump, as read: every field of [CERT-DUMP-02] and [CERT-DUMP-03]. */
typedef struct kvq_cert_dump {
    kvq_cert_shape shape;
    float scale;                           /* positive normal binary32 [CERT-L-01] */
    /* params [CERT-DUMP-03] */
    float tau, vtol, eps_guard, delta1, u_exp, eps_dense;
    uint32_t kmin, kmax, r, acc_depth, rescales;
    uint32_t promote, budget;              /* KVQ_PROMOTE_*, P under budget */
    uint32_t scoring;                      /* KVQ_SCORING_* */
    uint32_t ties;                         /* KVQ_TIES_* */
    uint32_t variant;                      /* KVQ_CERT_VARIANT_*; sparse in a version-1 dump */
    /* data: binary16 values held as binary32 */
    float *q;                              /* d */
    float *k, *v;                          /* [n][d] row-major */
    /* the kernel's step */
    uint32_t rung;                         /* 0..4 */
    uint8_t *sel;                          /* nb flags; the residual block is always 1 */
    uint8_t *prom;                         /* nb flags, a subset of sel (residual 0) */
    float *out;                            /* d binary32 */
    float ekey, eval, earith;              /* claims [CERT-CON-02] */
    int has_earith;                        /* 0: `earith=-` (earith then +inf) */
    long line_select, line_out, line_claim;             /* lines, for verdict messages */
} kvq_cert_dump;

/* Reader [CERT-DUMP-04]: KVQ_OK, or KVQ_E_IO / KVQ_E_FORMAT / KVQ_E_NOMEM with
 * "path:line: what" in err; on error *dp is left empty.  No allocation
 * exceeds what the input's length can fill (the shape is checked against the
 * number of bytes its K and V lines need before anything is allocated). */
kvq_status kvq_cert_dump_parse(kvq_cert_dump *dp, const char *buf, size_t len, const char *name,
                               char *err, size_t errlen);
kvq_status kvq_cert_dump_read(kvq_cert_dump *dp, const char *path, char *err, size_t errlen);

/* Allocate the arrays of a dump for dp->shape (zeroed); KVQ_E_NOMEM. */
kvq_status kvq_cert_dump_alloc(kvq_cert_dump *dp);

/* Writer, in the layout of [CERT-DUMP-02]; KVQ_E_PARAM for a value that has no
 * encoding (a q, k, v value that is not binary16), KVQ_E_IO on a write error. */
kvq_status kvq_cert_dump_write(FILE *f, const kvq_cert_dump *dp);

void kvq_cert_dump_free(kvq_cert_dump *dp);

#endif /* KVQ_CERTDUMP_H */
