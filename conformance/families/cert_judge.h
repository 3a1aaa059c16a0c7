/*
 * certjudge.h -- judging one CERT decode step against its certificate
 * (spec/cert.md, "`kvq cert` verdicts"): the checks of [CERT-VER-02] in
 * order, decided by the exact path.  Used by `kvq cert` (certcmd.c) and by
 * `kvq verify` for the CERT subjects.
 */
#ifndef KVQ_CERTJUDGE_H
#define KVQ_CERTJUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "cert_dump.h"
#include "kvq_exact.h"

/* The verdict on one step (outcome: KVQ_PASS or KVQ_FAIL of conf.h). */
typedef struct kvq_cert_case {
    char id[256];                 /* the dump's file name */
    int outcome;                  /* KVQ_PASS or KVQ_FAIL */
    const char *check;            /* the first failing check, or NULL */
    char detail[768];             /* the reason, naming the file [CERT-VER-02] */
    kvq_exact_cert_verdict v;     /* the exact path's values */
    kvq_cert_record rec;          /* the recomputed record [CERT-REC-01] */
    float claim_ekey, claim_eval, claim_earith;
    int has_earith;
    char sha256[65];              /* the dump's SHA-256 (kvq cert), or "" */
} kvq_cert_case;

/* Judge one step.  dp holds the inputs, the parameters, the kernel's rung,
 * selection, promotion, output and claims (as read from a dump, or filled by
 * a caller: dp->sel must have the residual block's flag set, dp->prom a
 * subset of dp->sel; at rungs 3-4 no full block is selected or promoted;
 * line_select, line_out 0 when there is no file, and the reasons then
 * name the step without a line).  name identifies the step in every reason (a file name
 * or a case id).
 * Returns KVQ_OK when a verdict was reached: c->outcome is KVQ_PASS, or
 * KVQ_FAIL with c->check the first failing check of [CERT-VER-02]
 * ("selector", "promotion", "ladder", "claims", "contract") and c->detail the
 * reason (name, check, exact value and bound).  Any other status: the step
 * could not be judged (bad data, out of memory); err holds "name: what" and c
 * is not a verdict.  SPEC: [CERT-VER-02] */
kvq_status kvq_cert_judge(kvq_cert_case *c, const kvq_cert_dump *dp, const char *name, char *err,
                          size_t errlen);

/* The quantized cache of a step, built from its binary16 originals by the
 * pinned fast-path quantizers (bit for bit the exact path's,
 * tests/check_cert.c random_vs_exact) [CERT-CON-03]. */
typedef struct kvq_cert_qcache {
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    kvq_cert_cache cache;                /* points into the arrays above and to k, v */
} kvq_cert_qcache;

/* Quantize k, v ([n][d] binary16 values, kept by reference) under the tie
 * rule ties; KVQ_OK or the quantizers' error (nothing left allocated). */
kvq_status kvq_cert_qcache_build(kvq_cert_qcache *c, const float *k, const float *v,
                                 const kvq_cert_shape *sh, uint32_t ties);
void kvq_cert_qcache_free(kvq_cert_qcache *c);

/* Reports of kvq cert (cert_report.c): [VER-REP-01] / [VER-REP-02] with
 * classname "cert". */
kvq_status kvq_report_cert_json(const char *path, const kvq_cert_case *c, size_t n, char *err, size_t errlen);
kvq_status kvq_report_cert_junit(const char *path, const kvq_cert_case *c, size_t n, char *err, size_t errlen);

#endif /* KVQ_CERTJUDGE_H */
