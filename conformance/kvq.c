/*
 * kvq.c -- the kvq command (spec/verify.md).
 *
 *   kvq gen     conformance vectors
 *   kvq run     run a subject over vectors, write its results file
 *   kvq verify  judge a results file or a subject against vectors
 *   kvq demo    generate the standard vectors and verify the bundled subjects
 *   kvq report-check  whether a report is one of a vector file and a subject
 *   kvq ops     the registry: families, operations, levels, entry points
 *   kvq <cmd>   a family's own command (kvq cert, kvq bench; registry.h)
 *
 * Exit status: 0 everything passed; 1 a case failed or was skipped; 2 usage or
 * input error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "rule.h"

#define DEFAULT_SEED 0x00000000006b7671ull
#define EXIT_INPUT 2

#define USAGE_GEN "  kvq gen --family FAMILY --level smoke|standard|large [--seed S] [--shard I/N] -o FILE\n" \
                  "          [--progress|--quiet]\n"
#define USAGE_RUN "  kvq run --subject NAME|PATH.so --vectors FILE -o RESULTS [--timeout SEC] [--progress|--quiet]\n"
#define USAGE_VERIFY                                                                             \
    "  kvq verify --vectors FILE (--results FILE | --subject NAME|PATH.so) [--shard I/N]\n"      \
    "             [--level exact|bounded|all] [--ops all|answered|OP,OP...] [--json FILE]\n"     \
    "             [--junit FILE] [--html FILE] [--max-show N] [--timeout SEC] [--progress|--quiet]\n"
#define USAGE_MERGE "  kvq merge SHARD.json... [--json FILE] [--junit FILE] [--html FILE]\n"
#define USAGE_RCHECK "  kvq report-check REPORT.json --vectors FILE [--subject NAME|PATH.so | --results FILE]\n"
#define USAGE_DEMO "  kvq demo [--out DIR] [--gpu-subject PATH.so]\n"
#define USAGE_OPS "  kvq ops [--markdown | --json [-o FILE] | --families]\n"

static void usage(FILE *f)
{
    fputs("usage:\n" USAGE_GEN USAGE_RUN USAGE_VERIFY USAGE_MERGE USAGE_RCHECK USAGE_DEMO USAGE_OPS
          "  kvq version | --version\n", f);
    for (size_t i = 0; i < kvq_family_count(); i++) /* the families' own commands */
        for (size_t k = 0; k < KVQ_FAMILY_MAX_COMMANDS && kvq_family_at(i)->commands[k].name; k++)
            fputs(kvq_family_at(i)->commands[k].usage, f);
    fputs("built-in subjects: ref-fast\n", f);
}

/* `--help` (or -h) anywhere among a subcommand's options: its usage on
 * standard output, exit 0 [VER-CLI-01]. */
static int wants_help(int argc, char **argv, const char *text)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage:\n%s", text);
            return 1;
        }
    return 0;
}

/* Decimal, 0x hex or 0 octal (strtoull base 0), starting with a digit: no
 * sign and no blank before it [VER-CLI-02]. */
static int parse_u64_any(const char *s, uint64_t *v)
{
    char *end;
    if (*s < '0' || *s > '9') return 0;
    errno = 0;
    *v = strtoull(s, &end, 0);
    return errno == 0 && *end == '\0';
}

/* A decimal of digits only (no sign, no blank), below 2^63. */
static int parse_dec(const char *s, const char *end, uint64_t *v)
{
    uint64_t r = 0;
    if (s == end) return 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || r > (((uint64_t)1 << 63) - 10u) / 10u) return 0;
        r = r * 10u + (uint64_t)(*s - '0');
    }
    *v = r;
    return 1;
}

/* I/N with I < N, both plain decimals [VEC-GEN-01]. */
static int parse_shard(const char *s, uint64_t *i, uint64_t *n)
{
    const char *slash = strchr(s, '/');
    uint64_t a, b;
    if (slash == NULL || !parse_dec(s, slash, &a) || !parse_dec(slash + 1, slash + strlen(slash), &b) ||
        b == 0 || a >= b)
        return 0;
    *i = a;
    *n = b;
    return 1;
}

/* A subject named by path is a file the command reads; a built-in name is not. */
static const char *subject_file(const char *subject)
{
    return subject != NULL && kvq_subject_builtin(subject) == NULL ? subject : NULL;
}

/* Write a vector file [VER-RUN-04] [VEC-FMT-07]. */
static int write_vectors(const kvq_vfile *vf, const char *path, const char *who)
{
    kvq_outfile o;
    char err[1024];
    if (kvq_outfile_open(&o, path, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "%s: %s\n", who, err);
        return 0;
    }
    if (kvq_vec_write(o.f, vf) != KVQ_OK) {
        fprintf(stderr, "%s: %s: write failed: %s\n", who, path, strerror(errno ? errno : EIO));
        kvq_outfile_abort(&o);
        return 0;
    }
    if (kvq_outfile_commit(&o, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "%s: %s\n", who, err);
        return 0;
    }
    return 1;
}

/* Read a vector file; a file without its end line reads, with a warning
 * [VEC-FMT-07]. */
static int read_vectors(kvq_vfile *vf, const char *path, const char *who)
{
    char err[1024];
    if (kvq_vec_read(vf, path, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "%s: %s\n", who, err);
        return 0;
    }
    if (!vf->trailer)
        fprintf(stderr, "%s: warning: %s has no end line (written before kvq 0.2): a copy cut at a "
                "line boundary cannot be told from the whole file\n", who, path);
    return 1;
}

static int cmd_gen(int argc, char **argv)
{
    const char *family = NULL, *level = NULL, *out = NULL;
    uint64_t seed = DEFAULT_SEED;
    uint64_t si = 0, sn = 1;
    const kvq_family *fam;
    kvq_vfile vf;
    kvq_progress pg;
    int progress = 0;
    char err[512];
    if (wants_help(argc, argv, USAGE_GEN)) return 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--progress") == 0 || strcmp(a, "--quiet") == 0) { /* [VER-CLI-07] */
            progress = a[2] == 'p' ? 1 : -1;
            continue;
        }
        if (v == NULL) { fprintf(stderr, "kvq gen: %s needs a value\n", a); return EXIT_INPUT; }
        if (strcmp(a, "--family") == 0) family = v;
        else if (strcmp(a, "--level") == 0) level = v;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0) out = v;
        else if (strcmp(a, "--seed") == 0) {
            if (!parse_u64_any(v, &seed)) { fprintf(stderr, "kvq gen: bad seed '%s'\n", v); return EXIT_INPUT; }
        } else if (strcmp(a, "--shard") == 0) {
            if (!parse_shard(v, &si, &sn)) { fprintf(stderr, "kvq gen: bad shard '%s' (I/N with I < N)\n", v); return EXIT_INPUT; }
        } else { fprintf(stderr, "kvq gen: unknown option '%s'\n", a); usage(stderr); return EXIT_INPUT; }
        i++;
    }
    if (family == NULL || level == NULL || out == NULL) {
        fprintf(stderr, "kvq gen: --family, --level and -o are required\n");
        return EXIT_INPUT;
    }
    if ((fam = kvq_family_find(family)) == NULL) {
        fprintf(stderr, "kvq gen: unknown family '%s' (this kvq has: %s)\n", family, kvq_family_names());
        return EXIT_INPUT;
    }
    kvq_progress_init(&pg, "kvq gen", progress);
    if (kvq_gen_progress(&vf, fam, level, seed, si, sn, &pg, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq gen: %s\n", err);
        return EXIT_INPUT;
    }
    if (!write_vectors(&vf, out, "kvq gen")) { kvq_vfile_free(&vf); return EXIT_INPUT; }
    fprintf(stderr, "kvq gen: %zu %s cases (%s, seed 0x%016llx, shard %llu/%llu%s) -> %s\n", vf.ncases,
            family, level, (unsigned long long)seed, (unsigned long long)si, (unsigned long long)sn,
            vf.ncases == 0 ? ": past the last case, an empty shard [VEC-GEN-03]" : "", out);
    kvq_vfile_free(&vf);
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *subject = NULL, *vectors = NULL, *out = NULL;
    uint64_t timeout = 120;
    kvq_vfile vf;
    kvq_progress pg;
    int progress = 0;
    char err[1024];
    if (wants_help(argc, argv, USAGE_RUN)) return 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--progress") == 0 || strcmp(a, "--quiet") == 0) { /* [VER-CLI-07] */
            progress = a[2] == 'p' ? 1 : -1;
            continue;
        }
        if (v == NULL) { fprintf(stderr, "kvq run: %s needs a value\n", a); return EXIT_INPUT; }
        if (strcmp(a, "--subject") == 0) subject = v;
        else if (strcmp(a, "--vectors") == 0) vectors = v;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0) out = v;
        else if (strcmp(a, "--timeout") == 0) {
            if (!parse_u64_any(v, &timeout) || timeout == 0 || timeout > 86400) { fprintf(stderr, "kvq run: bad timeout '%s'\n", v); return EXIT_INPUT; }
        } else { fprintf(stderr, "kvq run: unknown option '%s'\n", a); usage(stderr); return EXIT_INPUT; }
        i++;
    }
    if (subject == NULL || vectors == NULL || out == NULL) {
        fprintf(stderr, "kvq run: --subject, --vectors and -o are required\n");
        return EXIT_INPUT;
    }
    {
        const kvq_argpath in[] = { { "--vectors", vectors }, { "--subject", subject_file(subject) } };
        const kvq_argpath outp[] = { { "-o", out } };
        if (kvq_paths_clash("kvq run", in, 2, outp, 1)) return EXIT_INPUT;
    }
    if (!read_vectors(&vf, vectors, "kvq run")) return EXIT_INPUT;
    kvq_progress_init(&pg, "kvq run", progress);
    if (kvq_run_subject_progress(subject, &vf, out, (unsigned)timeout, &pg, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq run: %s\n", err);
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    kvq_vfile_free(&vf);
    return 0;
}

typedef struct verify_opts {
    const char *vectors, *results, *subject, *json, *junit, *html, *ops;
    unsigned level_mask, timeout;
    size_t max_show;
    int replace_results; /* the demo: --results may be replaced */
    int progress;        /* kvq_progress_init's mode */
    uint64_t shard_i, shard_n;
} verify_opts;

/* Keep the cases of one shard, ordinals i mod n of the file [VER-MERGE-01]. */
static void keep_shard(kvq_vfile *vf, uint64_t i, uint64_t n)
{
    size_t kept = 0;
    for (size_t k = 0; k < vf->ncases; k++) {
        if (k % n == i) vf->cases[kept++] = vf->cases[k];
        else kvq_case_free(&vf->cases[k]);
    }
    vf->ncases = kept;
}

/* A results file answers the whole vector file; a shard's verification judges
 * the results of its own cases and sets aside those of the other shards' cases
 * (ordinals not i mod n of the full file) [VER-MERGE-01].  A result for a case
 * the full file does not hold stays, and kvq_verify refuses it. */
typedef struct {
    char **ids; /* sorted, owned */
    size_t n;
} id_set;

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void id_set_free(id_set *s)
{
    for (size_t k = 0; k < s->n; k++) free(s->ids[k]);
    free(s->ids);
    s->ids = NULL;
    s->n = 0;
}

static int other_shards(id_set *s, const kvq_vfile *full, uint64_t i, uint64_t n)
{
    s->n = 0;
    if ((s->ids = malloc((full->ncases ? full->ncases : 1) * sizeof *s->ids)) == NULL) return 0;
    for (size_t k = 0; k < full->ncases; k++) {
        if (k % n == i) continue;
        if ((s->ids[s->n] = strdup(full->cases[k].id)) == NULL) {
            id_set_free(s);
            return 0;
        }
        s->n++;
    }
    qsort(s->ids, s->n, sizeof *s->ids, cmp_str_ptr);
    return 1;
}

static void drop_results_of(kvq_rfile *rf, const id_set *s)
{
    size_t kept = 0;
    if (s->n == 0) return;
    for (size_t r = 0; r < rf->ncases; r++) {
        const char *id = rf->cases[r].id;
        if (bsearch(&id, s->ids, s->n, sizeof *s->ids, cmp_str_ptr) != NULL) kvq_rcase_free(&rf->cases[r]);
        else rf->cases[kept++] = rf->cases[r];
    }
    rf->ncases = kept;
}

/* The operations a run claims [VER-CLAIM-01]: "all" (NULL), "answered" (every
 * operation the results answer with a result that is not skipped), or a list
 * of registered operation names. */
static int claimed_ops(const char *spec, const kvq_vfile *vf, const kvq_rfile *rf, const kvq_op **ops,
                       size_t *n)
{
    *n = 0;
    if (spec == NULL || strcmp(spec, "all") == 0) return 1;
    if (strcmp(spec, "answered") == 0) {
        for (size_t i = 0; i < rf->ncases; i++) {
            const kvq_op *op = NULL;
            size_t k;
            if (rf->cases[i].skipped != NULL) continue;
            for (k = 0; k < vf->ncases && op == NULL; k++)
                if (strcmp(vf->cases[k].id, rf->cases[i].id) == 0) op = vf->cases[k].op;
            for (k = 0; op != NULL && k < *n && ops[k] != op; k++) {}
            if (op != NULL && k == *n && *n < 64) ops[(*n)++] = op;
        }
        return 1;
    }
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[64];
        const kvq_op *op;
        if (len == 0 || len >= sizeof name || *n == 64) return 0;
        memcpy(name, p, len);
        name[len] = '\0';
        if ((op = kvq_op_find(name)) == NULL) {
            fprintf(stderr, "kvq verify: --ops: no operation '%s' (kvq ops lists them)\n", name);
            return 0;
        }
        ops[(*n)++] = op;
        p += len + (comma != NULL);
    }
    return *n > 0;
}

/* Verify one subject (or results file); returns the exit status. */
static int do_verify(const verify_opts *o, kvq_verify_report *keep)
{
    kvq_vfile vf;
    kvq_rfile rf;
    kvq_verify_report rep;
    const kvq_op *ops[64];
    size_t nops = 0;
    char err[1024], tmpres[64] = "";
    const char *rpath = o->results;
    kvq_provenance prov; /* what the reports record [VER-REP-05] */
    kvq_subject_info info;
    id_set others = {NULL, 0}; /* results mode, sharded: the other shards' case ids */
    int rc;
    memset(&prov, 0, sizeof prov);
    if (!read_vectors(&vf, o->vectors, "kvq verify")) return EXIT_INPUT;
    if (kvq_provenance_vectors(&prov, o->vectors, &vf, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq verify: %s\n", err);
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    if (o->shard_n > 1 && o->subject == NULL && !other_shards(&others, &vf, o->shard_i, o->shard_n)) {
        fprintf(stderr, "kvq verify: out of memory\n");
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    if (o->shard_n > 1) keep_shard(&vf, o->shard_i, o->shard_n);
    if (o->subject != NULL) {
        kvq_progress pg;
        kvq_progress_init(&pg, "kvq verify", o->progress);
        if (rpath == NULL) { /* a private file, removed after reading */
            const char *dir = getenv("TMPDIR");
            int fd;
            snprintf(tmpres, sizeof tmpres, "%.40s/kvq-results-XXXXXX", dir != NULL && dir[0] ? dir : "/tmp");
            if ((fd = mkstemp(tmpres)) < 0) {
                fprintf(stderr, "kvq verify: %s: cannot create: %s\n", tmpres, strerror(errno));
                kvq_vfile_free(&vf);
                return EXIT_INPUT;
            }
            close(fd);
            rpath = tmpres;
        } else if (!o->replace_results && access(rpath, F_OK) == 0) {
            /* [VER-CLI-04]: --results with --subject names a new file */
            fprintf(stderr, "kvq verify: %s exists; --results with --subject writes a new results file "
                    "(remove it, or name another path)\n", rpath);
            kvq_vfile_free(&vf);
            return EXIT_INPUT;
        }
        if (kvq_run_subject_info(o->subject, &vf, rpath, o->timeout, &pg, &info, err, sizeof err) != KVQ_OK ||
            kvq_provenance_subject(&prov, o->subject, &info, err, sizeof err) != KVQ_OK) {
            fprintf(stderr, "kvq verify: subject %s: %s\n", o->subject, err);
            if (tmpres[0]) remove(tmpres);
            kvq_vfile_free(&vf);
            return EXIT_INPUT;
        }
    }
    if (kvq_res_read(&rf, rpath, err, sizeof err) != KVQ_OK ||
        (o->subject == NULL && kvq_provenance_results(&prov, rpath, err, sizeof err) != KVQ_OK)) {
        fprintf(stderr, "kvq verify: %s\n", err);
        if (tmpres[0]) remove(tmpres);
        id_set_free(&others);
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    if (tmpres[0]) remove(tmpres);
    drop_results_of(&rf, &others);
    id_set_free(&others);
    if (!claimed_ops(o->ops, &vf, &rf, ops, &nops)) {
        if (o->ops != NULL) fprintf(stderr, "kvq verify: bad --ops '%s' (all, answered, or operation names)\n", o->ops);
        kvq_rfile_free(&rf);
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    if (kvq_verify(&rep, &vf, o->vectors, &rf, rpath, o->level_mask, o->ops != NULL && strcmp(o->ops, "all") != 0 ? ops : NULL,
                   nops) != KVQ_OK) {
        fprintf(stderr, "kvq verify: %s\n", rep.skip_reason[0] ? rep.skip_reason : "cannot verify");
        kvq_rfile_free(&rf);
        kvq_vfile_free(&vf);
        return EXIT_INPUT;
    }
    rep.prov = prov;
    kvq_provenance_judged(&rep.prov, o->level_mask, o->ops, ops, nops);
    if (o->subject != NULL) rep.results[0] = '\0'; /* kvq's own (or kept) results: the subject is what was judged */
    if (o->shard_n > 0)
        snprintf(rep.shard, sizeof rep.shard, "%llu/%llu", (unsigned long long)o->shard_i, (unsigned long long)o->shard_n);
    kvq_report_text(stdout, &rep, o->max_show);
    rc = (rep.failed || rep.skipped || rep.n == 0) ? 1 : 0;
    if (o->json != NULL && kvq_report_json(o->json, &rep, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq verify: %s\n", err);
        rc = EXIT_INPUT;
    }
    if (o->junit != NULL && kvq_report_junit(o->junit, &rep, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq verify: %s\n", err);
        rc = EXIT_INPUT;
    }
    if (o->html != NULL && kvq_report_html(o->html, &rep, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq verify: %s\n", err);
        rc = EXIT_INPUT;
    }
    if (keep != NULL) {
        memset(keep, 0, sizeof *keep);
        snprintf(keep->subject, sizeof keep->subject, "%s", rep.subject);
        snprintf(keep->skip_reason, sizeof keep->skip_reason, "%s", rep.skip_reason);
        keep->passed = rep.passed;
        keep->failed = rep.failed;
        keep->skipped = rep.skipped;
    }
    kvq_verify_report_free(&rep);
    kvq_rfile_free(&rf);
    kvq_vfile_free(&vf);
    return rc;
}

static int cmd_verify(int argc, char **argv)
{
    verify_opts o;
    memset(&o, 0, sizeof o);
    o.level_mask = KVQ_LEVELS_ALL;
    o.timeout = 120;
    o.max_show = 10;
    if (wants_help(argc, argv, USAGE_VERIFY)) return 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (strcmp(a, "--progress") == 0 || strcmp(a, "--quiet") == 0) { /* [VER-CLI-07] */
            o.progress = a[2] == 'p' ? 1 : -1;
            continue;
        }
        if (v == NULL) { fprintf(stderr, "kvq verify: %s needs a value\n", a); return EXIT_INPUT; }
        if (strcmp(a, "--vectors") == 0) o.vectors = v;
        else if (strcmp(a, "--results") == 0) o.results = v;
        else if (strcmp(a, "--subject") == 0) o.subject = v;
        else if (strcmp(a, "--json") == 0) o.json = v;
        else if (strcmp(a, "--junit") == 0) o.junit = v;
        else if (strcmp(a, "--ops") == 0) o.ops = v;
        else if (strcmp(a, "--html") == 0) o.html = v;
        else if (strcmp(a, "--shard") == 0) {
            if (!parse_shard(v, &o.shard_i, &o.shard_n)) { fprintf(stderr, "kvq verify: bad shard '%s' (I/N with I < N)\n", v); return EXIT_INPUT; }
        }
        else if (strcmp(a, "--level") == 0) {
            if (strcmp(v, "exact") == 0) o.level_mask = KVQ_LEVELS_MASK(KVQ_LEVEL_EXACT);
            else if (strcmp(v, "bounded") == 0) o.level_mask = KVQ_LEVELS_MASK(KVQ_LEVEL_BOUNDED);
            else if (strcmp(v, "all") == 0) o.level_mask = KVQ_LEVELS_ALL;
            else { fprintf(stderr, "kvq verify: bad level '%s'\n", v); return EXIT_INPUT; }
        } else if (strcmp(a, "--max-show") == 0) {
            if (!parse_u64_any(v, &u)) { fprintf(stderr, "kvq verify: bad --max-show '%s'\n", v); return EXIT_INPUT; }
            o.max_show = (size_t)u;
        } else if (strcmp(a, "--timeout") == 0) {
            if (!parse_u64_any(v, &u) || u == 0 || u > 86400) { fprintf(stderr, "kvq verify: bad timeout '%s'\n", v); return EXIT_INPUT; }
            o.timeout = (unsigned)u;
        } else { fprintf(stderr, "kvq verify: unknown option '%s'\n", a); usage(stderr); return EXIT_INPUT; }
        i++;
    }
    if (o.vectors == NULL || (o.results == NULL && o.subject == NULL)) {
        fprintf(stderr, "kvq verify: --vectors and one of --results or --subject are required\n");
        return EXIT_INPUT;
    }
    {
        /* --results is read, or with --subject written [VER-CLI-04] */
        const kvq_argpath in[] = { { "--vectors", o.vectors }, { "--subject", subject_file(o.subject) },
                                   { "--results", o.subject == NULL ? o.results : NULL } };
        const kvq_argpath outp[] = { { "--results", o.subject != NULL ? o.results : NULL }, { "--json", o.json },
                                     { "--junit", o.junit }, { "--html", o.html } };
        if (kvq_paths_clash("kvq verify", in, 3, outp, 4)) return EXIT_INPUT;
    }
    return do_verify(&o, NULL);
}

/* One family of the demo: generate its standard vectors, verify ref-fast and
 * the GPU subject (when given).  rc[0], rc[1]: the two exit statuses (-1 when
 * not run); rep[0..1] their counts. */
static int demo_family(const char *dir, const kvq_family *fam, const char *gpu, int rc[2],
                       kvq_verify_report rep[2])
{
    char vec[1024], res[1024], json[1024], junit[1024], html[1024], err[512];
    kvq_vfile vf;
    verify_opts o;
    snprintf(vec, sizeof vec, "%s/%s-standard.vec", dir, fam->name);
    printf("== kvq demo: %s conformance, standard level\n", fam->title);
    if (kvq_gen(&vf, fam, "standard", DEFAULT_SEED, 0, 1, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq demo: %s\n", err);
        return 0;
    }
    if (!write_vectors(&vf, vec, "kvq demo")) { kvq_vfile_free(&vf); return 0; }
    printf("generated %zu cases with the exact path (MPFR) -> %s\n\n", vf.ncases, vec);
    kvq_vfile_free(&vf);
    memset(&o, 0, sizeof o);
    o.vectors = vec;
    o.level_mask = KVQ_LEVELS_ALL;
    o.timeout = 120;
    o.max_show = 10;
    o.replace_results = 1; /* the demo's own directory */
    for (int i = 0; i < 2; i++) {
        const char *subj = i == 0 ? "ref-fast" : gpu, *tag = i == 0 ? "ref-fast" : "gpu";
        rc[i] = -1;
        if (subj == NULL) continue;
        snprintf(res, sizeof res, "%s/%s-%s.results", dir, fam->name, tag);
        snprintf(json, sizeof json, "%s/%s-%s.json", dir, fam->name, tag);
        snprintf(junit, sizeof junit, "%s/%s-%s.junit.xml", dir, fam->name, tag);
        snprintf(html, sizeof html, "%s/%s-%s.html", dir, fam->name, tag);
        o.subject = subj, o.results = res, o.json = json, o.junit = junit, o.html = html;
        printf(i == 0 ? "-- subject ref-fast (bundled binary32 reference)\n"
                      : "\n-- subject %s (bundled CUDA kernels)\n", subj);
        rc[i] = do_verify(&o, &rep[i]);
    }
    printf("\n");
    return 1;
}

static void demo_line(const char *label, int rc, const kvq_verify_report *rep, const char *none)
{
    if (rc < 0)
        printf("  %-16s SKIPPED (%s)\n", label, none);
    else if (rc == 1 && rep->skipped && !rep->failed)
        printf("  %-16s SKIPPED (%zu passed, %zu skipped: %s)\n", label, rep->passed, rep->skipped,
               rep->skip_reason[0] ? rep->skip_reason : "operations the subject does not implement");
    else
        printf("  %-16s %s (%zu passed, %zu failed%s)\n", label, rc == 0 ? "PASS" : "FAIL",
               rc == EXIT_INPUT ? 0 : rep->passed, rc == EXIT_INPUT ? 0 : rep->failed,
               rc != EXIT_INPUT && rep->skipped ? ", some skipped" : "");
}

/* [VER-CLI-05]: every family of the registry; ref-fast must pass every case
 * of each; a GPU subject whose cases were only skipped (no device, or
 * operations it does not implement) is reported SKIPPED and does not fail the
 * demo, but a failed GPU case does. */
static int cmd_demo(int argc, char **argv)
{
    const char *dir = "build/demo", *gpu = NULL;
    size_t nf = kvq_family_count();
    kvq_verify_report (*rep)[2] = calloc(nf, sizeof *rep);
    int (*rc)[2] = calloc(nf, sizeof *rc), rc_out = 0;
    if (rep == NULL || rc == NULL) {
        fprintf(stderr, "kvq demo: out of memory\n");
        free(rep), free(rc);
        return EXIT_INPUT;
    }
    if (wants_help(argc, argv, USAGE_DEMO)) goto out;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) { fprintf(stderr, "kvq demo: %s needs a value\n", a); rc_out = EXIT_INPUT; goto out; }
        if (strcmp(a, "--out") == 0) dir = v;
        else if (strcmp(a, "--gpu-subject") == 0) gpu = v;
        else { fprintf(stderr, "kvq demo: unknown option '%s'\n", a); usage(stderr); rc_out = EXIT_INPUT; goto out; }
        i++;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "kvq demo: cannot create %s: %s\n", dir, strerror(errno));
        rc_out = EXIT_INPUT;
        goto out;
    }
    for (size_t f = 0; f < nf; f++)
        if (!demo_family(dir, kvq_family_at(f), gpu, rc[f], rep[f])) { rc_out = EXIT_INPUT; goto out; }
    printf("== summary\n");
    for (size_t f = 0; f < nf; f++) {
        char label[64];
        snprintf(label, sizeof label, "%s ref-fast", kvq_family_at(f)->name);
        demo_line(label, rc[f][0], &rep[f][0], "");
        snprintf(label, sizeof label, "%s gpu", kvq_family_at(f)->name);
        demo_line(label, rc[f][1], &rep[f][1], "no GPU subject built: nvcc not found");
    }
    printf("  reports: %s/*.json, %s/*.junit.xml, %s/*.html\n", dir, dir, dir);
    for (size_t f = 0; f < nf && rc_out == 0; f++)
        if (rc[f][0] != 0) rc_out = rc[f][0];
    for (size_t f = 0; f < nf && rc_out == 0; f++) {
        int r = rc[f][1];
        if (r == 1 && rep[f][1].skipped && !rep[f][1].failed) continue; /* reported as SKIPPED */
        if (r > 0) rc_out = r;
    }
out:
    free(rep), free(rc);
    return rc_out;
}

/* `kvq merge` [VER-MERGE-01]: the shards' JSON reports into the whole run's. */
static int cmd_merge(int argc, char **argv)
{
    const char **paths = calloc((size_t)argc, sizeof *paths), *json = NULL, *junit = NULL, *html = NULL;
    size_t n = 0;
    char err[1024];
    int rc = 0;
    if (paths == NULL) return EXIT_INPUT;
    if (wants_help(argc, argv, USAGE_MERGE)) {
        free(paths);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') { paths[n++] = a; continue; }
        if (v == NULL) { fprintf(stderr, "kvq merge: %s needs a value\n", a); free(paths); return EXIT_INPUT; }
        if (strcmp(a, "--json") == 0) json = v;
        else if (strcmp(a, "--junit") == 0) junit = v;
        else if (strcmp(a, "--html") == 0) html = v;
        else { fprintf(stderr, "kvq merge: unknown option '%s'\n", a); free(paths); return EXIT_INPUT; }
        i++;
    }
    kvq_argpath *in = calloc(n ? n : 1, sizeof *in);
    const kvq_argpath outp[] = { { "--json", json }, { "--junit", junit }, { "--html", html } };
    if (in == NULL) { free(paths); return EXIT_INPUT; }
    for (size_t k = 0; k < n; k++) in[k].opt = "", in[k].path = paths[k];
    if (json == NULL && junit == NULL && html == NULL) {
        fprintf(stderr, "kvq merge: name at least one of --json, --junit, --html\n");
        rc = EXIT_INPUT;
    } else if (kvq_paths_clash("kvq merge", in, n, outp, 3)) {
        rc = EXIT_INPUT;
    } else if (kvq_merge(paths, n, json, junit, html, &rc, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq merge: %s\n", err);
        rc = EXIT_INPUT;
    }
    free(in);
    free(paths);
    return rc;
}

/* `kvq report-check` [VER-REP-06]: 0 the report is one of these vectors and
 * this subject (or results file), 1 an item differs (each named), 2 usage or
 * input error. */
static int cmd_report_check(int argc, char **argv)
{
    const char *report = NULL, *vectors = NULL, *subject = NULL, *results = NULL;
    size_t bad = 0;
    char err[1024];
    if (wants_help(argc, argv, USAGE_RCHECK)) return 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' && report == NULL) { report = a; continue; }
        if (a[0] != '-') { fprintf(stderr, "kvq report-check: one report at a time ('%s')\n", a); return EXIT_INPUT; }
        if (v == NULL) { fprintf(stderr, "kvq report-check: %s needs a value\n", a); return EXIT_INPUT; }
        if (strcmp(a, "--vectors") == 0) vectors = v;
        else if (strcmp(a, "--subject") == 0) subject = v;
        else if (strcmp(a, "--results") == 0) results = v;
        else { fprintf(stderr, "kvq report-check: unknown option '%s'\n", a); usage(stderr); return EXIT_INPUT; }
        i++;
    }
    if (report == NULL || vectors == NULL || (subject != NULL && results != NULL)) {
        fprintf(stderr, "kvq report-check: a report and --vectors are required, with at most one of --subject "
                "and --results\n");
        return EXIT_INPUT;
    }
    if (kvq_report_check(report, vectors, subject, results, stdout, &bad, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq report-check: %s\n", err);
        return EXIT_INPUT;
    }
    printf("kvq report-check: %s: %s\n", report, bad ? "MISMATCH" : "match");
    return bad ? 1 : 0;
}

/* `kvq ops` [VER-REG-06]: the registry as text, or as the spec's Markdown table. */
static const char *levels_text(uint32_t levels)
{
    return levels == (KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) | KVQ_LEVEL_BIT(KVQ_LEVEL_BOUNDED)) ? "exact, bounded"
         : levels == KVQ_LEVEL_BIT(KVQ_LEVEL_EXACT) ? "exact" : "bounded";
}

/* `kvq ops --json [-o FILE]` [VER-REG-12]: the registry description; a file
 * through a temporary one renamed into place. */
static int ops_json(const char *out)
{
    kvq_outfile o;
    char err[512];
    if (out == NULL) return kvq_registry_json(stdout) == KVQ_OK && fflush(stdout) == 0 ? 0 : EXIT_INPUT;
    if (kvq_outfile_open(&o, out, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq ops: %s\n", err);
        return EXIT_INPUT;
    }
    if (kvq_registry_json(o.f) != KVQ_OK) {
        kvq_outfile_abort(&o);
        fprintf(stderr, "kvq ops: %s: write error\n", out);
        return EXIT_INPUT;
    }
    if (kvq_outfile_commit(&o, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq ops: %s\n", err);
        return EXIT_INPUT;
    }
    return 0;
}

/* `kvq ops --families`: one line a family, its name then the routine level
 * sets it generates, for scripts [VER-REG-12] (the on-demand ones, `large`,
 * are in `kvq ops --json` [VEC-GEN-04]). */
static int ops_families(void)
{
    for (size_t f = 0; f < kvq_family_count(); f++) {
        const kvq_family *fam = kvq_family_at(f);
        fputs(fam->name, stdout);
        for (size_t l = 0; l < KVQ_LEVEL_SETS_ROUTINE; l++)
            if (fam->gen_count(kvq_level_set_names[l]) > 0) printf(" %s", kvq_level_set_names[l]);
        putchar('\n');
    }
    return fflush(stdout) == 0 ? 0 : EXIT_INPUT;
}

static int cmd_ops(int argc, char **argv)
{
    int md = 0, json = 0, fams = 0;
    const char *out = NULL;
    char err[320];
    if (wants_help(argc, argv, USAGE_OPS)) return 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0) md = 1;
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--families") == 0) fams = 1;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else { fprintf(stderr, "kvq ops: unknown option '%s'\n", argv[i]); return EXIT_INPUT; }
    }
    if (md + json + fams > 1 || (out != NULL && !json)) {
        fprintf(stderr, "kvq ops: one of --markdown, --json, --families; -o with --json only\n");
        return EXIT_INPUT;
    }
    /* a rule of the registry that does not parse is named before anything is written */
    for (size_t f = 0; f < kvq_family_count(); f++)
        for (size_t k = 0; k < kvq_family_at(f)->nops; k++)
            if (!kvq_rules_check(kvq_family_at(f)->ops[k], err, sizeof err)) {
                fprintf(stderr, "kvq ops: registry: %s\n", err);
                return EXIT_INPUT;
            }
    if (json) return ops_json(out);
    if (fams) return ops_families();
    if (md)
        printf("| family | operation | levels | subject entry points (signature version) | what it checks |\n"
               "|---|---|---|---|---|\n");
    for (size_t f = 0; f < kvq_family_count(); f++) {
        const kvq_family *fam = kvq_family_at(f);
        if (!md) printf("%s (%s)\n", fam->name, fam->spec);
        for (size_t k = 0; k < fam->nops; k++) {
            const kvq_op *op = fam->ops[k];
            char ents[256] = "";
            size_t len = 0;
            for (uint32_t e = 0; e < op->nentries && len < sizeof ents; e++) {
                const kvq_entry_decl *ed = &op->entries[e];
                len += (size_t)snprintf(ents + len, sizeof ents - len, "%s%s%s%s v%u", e ? ", " : "",
                                        md ? "`" : "", ed->name, md ? "`" : "", ed->sigver);
                /* an older version serving some variants [VER-REG-05] */
                for (uint32_t v = 0; ed->older && v < op->nvariants && len < sizeof ents; v++)
                    if (ed->older_variants >> v & 1u)
                        len += (size_t)snprintf(ents + len, sizeof ents - len, " (v%u: %s only)",
                                                ed->older, op->variants[v]);
            }
            if (op->nvariants && len < sizeof ents) {
                len += (size_t)snprintf(ents + len, sizeof ents - len, "; variants");
                for (uint32_t v = 0; v < op->nvariants && len < sizeof ents; v++)
                    len += (size_t)snprintf(ents + len, sizeof ents - len, " %s%s", op->variants[v],
                                            v == 0 ? " (default)" : "");
            }
            if (md)
                printf("| `%s` | `%s` | %s | %s | %s |\n", fam->name, op->name, levels_text(op->levels), ents,
                       op->summary);
            else
                printf("  %-12s levels: %-15s entries: %s\n  %-12s %s\n", op->name, levels_text(op->levels),
                       ents, "", op->summary);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_INPUT;
    }
    if (strcmp(argv[1], "gen") == 0) return cmd_gen(argc, argv);
    if (strcmp(argv[1], "run") == 0) return cmd_run(argc, argv);
    if (strcmp(argv[1], "verify") == 0) return cmd_verify(argc, argv);
    if (strcmp(argv[1], "demo") == 0) return cmd_demo(argc, argv);
    if (strcmp(argv[1], "ops") == 0) return cmd_ops(argc, argv);
    if (strcmp(argv[1], "merge") == 0) return cmd_merge(argc, argv);
    if (strcmp(argv[1], "report-check") == 0) return cmd_report_check(argc, argv);
    for (size_t i = 0; i < kvq_family_count(); i++)
        for (size_t k = 0; k < KVQ_FAMILY_MAX_COMMANDS && kvq_family_at(i)->commands[k].name; k++)
            if (strcmp(argv[1], kvq_family_at(i)->commands[k].name) == 0)
                return kvq_family_at(i)->commands[k].main(argc - 1, argv + 1);
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("kvq %s (vector and results format %u, subject ABI %u)\n", KVQ_VERSION_STRING,
               KVQ_VEC_VERSION, KVQ_SUBJECT_ABI_V3);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kvq: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_INPUT;
}
