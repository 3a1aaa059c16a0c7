/*
 * conf.h -- internal interfaces of the kvq command (spec/verify.md).
 */
#ifndef KVQ_CONF_H
#define KVQ_CONF_H

#include <stdio.h>

#include "kvq_exact.h"
#include "kvq_subject.h"
#include "registry.h"
#include "vecio.h"

#define KVQ_VERSION_STRING "0.1.0"

/* ---- gen ---------------------------------------------------------------- */

/* Generate the vectors of a family's level set for a seed, keeping the cases
 * whose ordinal k has k mod shard_n == shard_i.  Expected values come from the
 * exact path.  Deterministic: same arguments, same cases [VEC-GEN-01]. */
kvq_status kvq_gen(kvq_vfile *vf, const kvq_family *fam, const char *levels, uint64_t seed,
                   uint64_t shard_i, uint64_t shard_n, char *err, size_t errlen);

/* ---- subjects ------------------------------------------------------------- */

/* Built-in subjects by name ("ref-fast"); NULL if unknown. */
const kvq_subject_v3 *kvq_subject_builtin(const char *name);

/* Load a subject (a built-in name or a path to a shared object; ABI 3, or 1
 * and 2 through an adapter) into *s; 0 with a message when it cannot. */
int kvq_subject_load(kvq_subject *s, const char *subject, char *msg, size_t msglen);

/* Run a subject over every case of vf in child processes; write the results
 * file `out` (through a temporary file renamed at the end, so nothing
 * half-written remains).  A crash or a hang (no result within timeout_s
 * seconds) of the subject gives that case status KVQ_E_SUBJECT and the run
 * goes on with the next case. */
kvq_status kvq_run_subject(const char *subject, const kvq_vfile *vf, const char *out,
                           unsigned timeout_s, char *err, size_t errlen);

/* ---- verify ---------------------------------------------------------------- */

typedef struct kvq_verify_report {
    char subject[64];
    char vectors[512];
    char results[512];
    char skip_reason[256];
    size_t passed, failed, skipped, deselected;
    kvq_verdict *v;
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
/* Helpers of every report writer: "pass" | "fail" | "skip"; a string escaped
 * for JSON (xml 0) or XML attributes (xml 1); a temporary file next to path,
 * committed (renamed into place) or removed by kvq_report_commit. */
const char *kvq_outcome_name(int outcome);
void kvq_report_escape(FILE *f, const char *s, int xml);
FILE *kvq_report_open(const char *path, char *tmp, size_t tmplen);
kvq_status kvq_report_commit(FILE *f, const char *tmp, const char *path);
kvq_status kvq_report_json(const char *path, const kvq_verify_report *rep);
kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep);

#endif /* KVQ_CONF_H */
