/*
 * conf.h -- internal interfaces of the kvq command (spec/verify.md).
 */
#ifndef KVQ_CONF_H
#define KVQ_CONF_H

#include <stdio.h>

#include "certdump.h"
#include "certjudge.h"
#include "kvq_exact.h"
#include "kvq_subject.h"
#include "vecio.h"

#define KVQ_VERSION_STRING "0.1.0"

/* ---- gen ---------------------------------------------------------------- */

/* Generate the KIVI vectors of a level set ("smoke" | "standard") for a seed,
 * keeping the cases whose ordinal mod shard_n == shard_i.  Expected values come
 * from the exact path.  Deterministic: same arguments, same cases. */
kvq_status kvq_gen_kivi(kvq_vfile *vf, const char *levels, uint64_t seed, uint32_t shard_i,
                        uint32_t shard_n, char *err, size_t errlen);

/* ---- subjects ------------------------------------------------------------- */

/* Built-in subjects by name ("ref-fast"); NULL if unknown. */
const kvq_subject_v1 *kvq_subject_builtin(const char *name);

/* Run a subject (a built-in name or a path to a shared object) over every case
 * of vf in child processes; write the results file `out` (through a temporary
 * file renamed at the end, so nothing half-written remains).  A crash or a hang
 * (no result within timeout_s seconds) of the subject gives that case status
 * KVQ_E_SUBJECT and the run goes on with the next case. */
kvq_status kvq_run_subject(const char *subject, const kvq_vfile *vf, const char *out,
                           unsigned timeout_s, char *err, size_t errlen);

/* ---- verify ---------------------------------------------------------------- */

enum { KVQ_PASS = 0, KVQ_FAIL = 1, KVQ_SKIP = 2 };

typedef struct kvq_case_verdict {
    const kvq_vcase *vc;
    int outcome;
    char detail[640]; /* first discrepancy, in hex */
} kvq_case_verdict;

typedef struct kvq_verify_report {
    char subject[64];
    char vectors[512];
    char results[512];
    char skip_reason[256];
    size_t passed, failed, skipped, deselected;
    kvq_case_verdict *v;
    size_t n;
} kvq_verify_report;

/* Level filter for verify. */
#define KVQ_LEVELS_ALL 3u
#define KVQ_LEVELS_MASK(level) (1u << (level))

/* Judge a results file against vectors.  Returns KVQ_OK when the judgement
 * could be made (whatever the verdicts), an error otherwise. */
kvq_status kvq_verify(kvq_verify_report *rep, const kvq_vfile *vf, const char *vpath,
                      const kvq_rfile *rf, const char *rpath, unsigned level_mask);
void kvq_verify_report_free(kvq_verify_report *rep);

/* ---- reports ---------------------------------------------------------------- */

void kvq_report_text(FILE *f, const kvq_verify_report *rep, size_t max_show);
kvq_status kvq_report_json(const char *path, const kvq_verify_report *rep);
kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep);

/* ---- cert (spec/cert.md, [CERT-VER-01..03]) ------------------------------------ */


/* kvq cert ...: argv[0] is "cert".  Returns the exit status [CERT-VER-03]. */
int kvq_cert_main(int argc, char **argv);

/* Reports of kvq cert: [VER-REP-01] / [VER-REP-02] with classname "cert". */
kvq_status kvq_report_cert_json(const char *path, const kvq_cert_case *c, size_t n);
kvq_status kvq_report_cert_junit(const char *path, const kvq_cert_case *c, size_t n);

/* ---- bench ----------------------------------------------------------------- */

int kvq_bench_main(int argc, char **argv);

#endif /* KVQ_CONF_H */
