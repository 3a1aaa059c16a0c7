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

#define KVQ_VERSION_STRING "0.4.0"

/* ---- output files (outfile.c) ---------------------------------------------- */

/* A file being written [VER-RUN-04]: regular files and new paths through a
 * temporary file renamed into place by commit; devices and pipes in place. */
typedef struct kvq_outfile {
    FILE *f;              /* write here */
    char *path;           /* as given */
    char *target;         /* what commit replaces (a link's target); NULL: written in place */
    char *tmp;            /* the temporary file; NULL: written in place */
} kvq_outfile;

/* KVQ_OK, or KVQ_E_IO / KVQ_E_NOMEM / KVQ_E_PARAM with "path: what: why" in err. */
kvq_status kvq_outfile_open(kvq_outfile *o, const char *path, char *err, size_t errlen);
/* Close and move into place; on any error the temporary file is removed, the
 * path untouched, and err says why (errno's text). */
kvq_status kvq_outfile_commit(kvq_outfile *o, char *err, size_t errlen);
/* Give up: close, remove the temporary file. */
void kvq_outfile_abort(kvq_outfile *o);

/* A path a command reads or writes, with the option that named it ("-o",
 * "--vectors"; "" for an operand). */
typedef struct kvq_argpath {
    const char *opt, *path;
} kvq_argpath;

/* [VER-OUT-03]: 0, or 1 after a message "who: OPT PATH names the same file as
 * OPT2 PATH2: ..." on stderr, when an output names the same file as an input
 * or as another output: the same device and inode, through symbolic and hard
 * links; for paths that do not exist yet, the same name in the same
 * directory.  Devices and pipes (/dev/null, /dev/stdout) are not files and
 * may be named more than once.  NULL paths are skipped. */
int kvq_paths_clash(const char *who, const kvq_argpath *in, size_t nin, const kvq_argpath *out,
                    size_t nout);

/* ---- progress (progress.c) ---------------------------------------------------- */

typedef struct kvq_progress {
    const char *what;
    int on, tty, drawn;
    unsigned shown_tenth;
    double t0, last;
} kvq_progress;

/* mode > 0: always (--progress); 0: on a terminal unless CI is set; < 0: never. */
void kvq_progress_init(kvq_progress *p, const char *what, int mode);
void kvq_progress_tick(kvq_progress *p, uint64_t done, uint64_t total); /* p may be NULL */
void kvq_progress_end(kvq_progress *p);

/* ---- gen ---------------------------------------------------------------- */

/* Generate the vectors of a family's level set for a seed, keeping the cases
 * whose ordinal k has k mod shard_n == shard_i.  Expected values come from the
 * exact path.  Deterministic: same arguments, same cases [VEC-GEN-01]. */
kvq_status kvq_gen(kvq_vfile *vf, const kvq_family *fam, const char *levels, uint64_t seed,
                   uint64_t shard_i, uint64_t shard_n, char *err, size_t errlen);
/* The same, reporting progress (pg may be NULL). */
kvq_status kvq_gen_progress(kvq_vfile *vf, const kvq_family *fam, const char *levels, uint64_t seed,
                            uint64_t shard_i, uint64_t shard_n, kvq_progress *pg, char *err, size_t errlen);

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
kvq_status kvq_run_subject_progress(const char *subject, const kvq_vfile *vf, const char *out,
                                    unsigned timeout_s, kvq_progress *pg, char *err, size_t errlen);

/* ---- verify ---------------------------------------------------------------- */

typedef struct kvq_verify_report {
    char subject[64];
    char vectors[512];
    char results[512];
    char skip_reason[256];
    char claimed[512];     /* the operations judged, comma-separated [VER-CLAIM-01] */
    char shard[48];        /* "i/n" when the run judged one shard [VER-MERGE-01], else empty */
    size_t passed, failed, skipped, deselected;
    size_t unclaimed;      /* cases of operations the run does not claim: not judged */
    kvq_verdict *v;
    size_t n;
} kvq_verify_report;

/* Level filter for verify. */
#define KVQ_LEVELS_ALL 3u
#define KVQ_LEVELS_MASK(level) (1u << (level))

/* Judge a results file against vectors: the cases of the selected levels
 * and, when claimed is not NULL, of the nclaimed operations claimed (the
 * others counted as unclaimed, not judged).  Returns KVQ_OK when the
 * judgement could be made (whatever the verdicts), an error otherwise. */
kvq_status kvq_verify(kvq_verify_report *rep, const kvq_vfile *vf, const char *vpath,
                      const kvq_rfile *rf, const char *rpath, unsigned level_mask,
                      const kvq_op *const *claimed, size_t nclaimed);
void kvq_verify_report_free(kvq_verify_report *rep);

/* ---- merge (merge.c) ------------------------------------------------------------ */

/* Merge the JSON reports of the np shards of one run into the reports of the
 * whole run (each output path may be NULL) [VER-MERGE-01]; *verdict gets the
 * exit status the whole run's kvq verify has (0 passed, 1 failed or skipped). */
kvq_status kvq_merge(const char *const *paths, size_t np, const char *json, const char *junit,
                     const char *html, int *verdict, char *err, size_t errlen);

/* ---- reports ---------------------------------------------------------------- */

void kvq_report_text(FILE *f, const kvq_verify_report *rep, size_t max_show);
/* Helpers of every report writer: "pass" | "fail" | "skip"; a string escaped
 * for JSON (xml 0) or XML attributes (xml 1) [VER-REP-03]. */
const char *kvq_outcome_name(int outcome);
void kvq_report_escape(FILE *f, const char *s, int xml);

kvq_status kvq_report_json(const char *path, const kvq_verify_report *rep, char *err, size_t errlen);
kvq_status kvq_report_junit(const char *path, const kvq_verify_report *rep, char *err, size_t errlen);
/* A self-contained HTML5 page of the run (html.c) [VER-REP-04]: header and
 * verdict, counts per family, operation, level and requirement ID, the first
 * 50 failures with their detail, one SVG plot of observed error vs proven
 * bound per margin quantity.  No script, nothing fetched; text escaped and
 * kept UTF-8 [VER-REP-03]; same report, same bytes.  Written whole or not at
 * all [VER-RUN-04]: KVQ_OK, or KVQ_E_IO / KVQ_E_NOMEM / KVQ_E_PARAM with
 * "path: what: why" in err. */
kvq_status kvq_report_html(const char *path, const kvq_verify_report *rep, char *err, size_t errlen);

#endif /* KVQ_CONF_H */
