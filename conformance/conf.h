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
/* The JSON report's format ("kvq_report"): 2 records what was judged
 * [VER-REP-05]; format 1 (kvq 0.4.0 before it) did not. */
#define KVQ_REPORT_FORMAT 2

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

/* A subject's self-description, as the runner's child reports it. */
typedef struct kvq_subject_info {
    char version[64];
    char device[192];
} kvq_subject_info;

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
/* The same, also giving the subject's version and device as its child
 * reported them (its optional "subject_version" and "subject_device" entries,
 * kvq_subject.h; "unknown" without them) [VER-REP-05]. */
kvq_status kvq_run_subject_info(const char *subject, const kvq_vfile *vf, const char *out,
                                unsigned timeout_s, kvq_progress *pg, kvq_subject_info *info,
                                char *err, size_t errlen);

/* ---- SHA-256 (sha256.c) ------------------------------------------------------- */

typedef struct kvq_sha256 {
    uint32_t h[8];
    uint64_t len;          /* bytes so far */
    unsigned char buf[64];
    size_t nbuf;
} kvq_sha256;

void kvq_sha256_init(kvq_sha256 *s);
void kvq_sha256_update(kvq_sha256 *s, const void *data, size_t n);
/* The digest as 64 lowercase hex digits and a NUL. */
void kvq_sha256_final(kvq_sha256 *s, char hex[65]);
void kvq_sha256_hex(const void *data, size_t n, char hex[65]);
/* KVQ_OK, or KVQ_E_IO with "path: why" in err. */
kvq_status kvq_sha256_file(const char *path, char hex[65], char *err, size_t errlen);

/* ---- what a report judged (provenance.c) [VER-REP-05] ------------------------------ */

/* Every report records what it judged: the vector file (by its bytes and its
 * own digest), the selection judged, the subject (by the bytes of its file, or
 * the results file), the device and the kvq that judged.  Empty: not known
 * (a report built in memory). */
typedef struct kvq_provenance {
    char commit[64];          /* kvq's `git describe --always --dirty`, "unknown" outside git */
    char mode[16];            /* "subject" (kvq ran it) | "results" (a results file judged) */
    char subject_file[512];   /* subject mode: the --subject argument */
    char subject_sha256[72];  /* subject mode: SHA-256 of its file (of kvq itself for a built-in) */
    char subject_version[64]; /* its "subject_version" entry, "unknown" without one */
    char device[192];         /* its "subject_device" entry, "unknown" without one */
    char results_sha256[72];  /* results mode: SHA-256 of the results file */
    char vectors_sha256[72];  /* SHA-256 of the vector file's bytes */
    char vectors_digest[32];  /* "fnv1a64:<16 hex>" of its end line, "none" without one */
    char family[32];
    char level_set[32];       /* the header's `levels` */
    char seed[24];            /* "0x<16 hex>" */
    char vector_cases[24];    /* cases in the file (all shards), decimal */
    char level[16];           /* the levels judged: "all" | "exact" | "bounded" */
    char claim[512];          /* --ops: "all" | "answered" | the operations, in registry order */
} kvq_provenance;

/* KVQ_REPORT_FIXED_PROVENANCE=1 (for tests only: tests/golden.sh): the
 * machine's items -- commit, subject file and its SHA-256, device -- are
 * written as this text, so that a report's bytes do not depend on the machine. */
#define KVQ_PROVENANCE_FIXED "fixed-for-tests"

/* The vector file's items, from its bytes and its header (vf as read, before
 * any shard is kept). */
kvq_status kvq_provenance_vectors(kvq_provenance *p, const char *vpath, const kvq_vfile *vf, char *err,
                                  size_t errlen);
/* Subject mode: the subject's file (a built-in: kvq's own executable) and what
 * its child reported (info may be NULL: "unknown"). */
kvq_status kvq_provenance_subject(kvq_provenance *p, const char *subject, const kvq_subject_info *info,
                                  char *err, size_t errlen);
/* Results mode: the results file's bytes. */
kvq_status kvq_provenance_results(kvq_provenance *p, const char *rpath, char *err, size_t errlen);
/* The selection judged: the level mask and the claim as --ops gave it (NULL:
 * all; a list is written in registry order); and the kvq that judged. */
void kvq_provenance_judged(kvq_provenance *p, unsigned level_mask, const char *ops_spec,
                           const kvq_op *const *claimed, size_t nclaimed);
/* kvq's commit; the description of this host ("ref-fast"'s device). */
const char *kvq_commit(void);
void kvq_host_device(char *buf, size_t len);

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
    kvq_provenance prov;   /* what the report judged [VER-REP-05] */
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

/* The items every report records, in the JSON report's order after
 * "kvq_version" [VER-REP-05]: each a text field of kvq_verify_report (offset),
 * written as a JSON string (a number when `number`), the JUnit property
 * kvq.<key> and a row of the HTML header.  `same`: the shards of one run must
 * agree on it [VER-MERGE-02] (a path need not: the shard 0's is kept). */
typedef struct kvq_report_item {
    const char *key, *label;
    int number, same;
    size_t offset, size;
} kvq_report_item;
extern const kvq_report_item kvq_report_items[];
extern const size_t kvq_report_nitems;
/* The item's text in rep ("0" for an empty number). */
const char *kvq_report_item_text(const kvq_verify_report *rep, const kvq_report_item *it);

/* ---- merge (merge.c) ------------------------------------------------------------ */

/* Merge the JSON reports of the np shards of one run into the reports of the
 * whole run (each output path may be NULL) [VER-MERGE-01]; *verdict gets the
 * exit status the whole run's kvq verify has (0 passed, 1 failed or skipped),
 * recounted from the cases [VER-MERGE-02]. */
kvq_status kvq_merge(const char *const *paths, size_t np, const char *json, const char *junit,
                     const char *html, int *verdict, char *err, size_t errlen);

/* `kvq report-check` [VER-REP-06]: whether the JSON report at path is a report
 * of the vector file vpath and of the subject (subject mode) or the results
 * file (results mode) given (either may be NULL: not checked).  KVQ_OK with
 * *mismatches the number of differing items, each printed to out as
 * "<item>: expected <x>, recorded <y>"; an error (unreadable input, not a
 * report) with err set. */
kvq_status kvq_report_check(const char *path, const char *vpath, const char *subject, const char *rpath,
                            FILE *out, size_t *mismatches, char *err, size_t errlen);

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
