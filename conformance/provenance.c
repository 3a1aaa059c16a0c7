/*
 * provenance.c -- what a report judged [VER-REP-05]: the vector file by its
 * bytes (SHA-256) and by its own end-line digest, its family, level set,
 * seed and case count; the levels and the claim judged; the subject by the
 * SHA-256 of its file, its name, version and device, or the results file by
 * its SHA-256; and the kvq (version and commit) that judged.  A PASS is then
 * tied to the build that earned it and the vectors it was earned on, and
 * `kvq report-check` can tell whether a report is one of a given vector file
 * and subject [VER-REP-06].
 */
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "conf.h"
#include "lexio.h"

#ifndef KVQ_COMMIT
#define KVQ_COMMIT "unknown" /* built outside git (the Makefile embeds `git describe`) */
#endif

/* KVQ_REPORT_FIXED_PROVENANCE=1: the machine's items written as fixed text (for
 * tests only: tests/golden.sh hashes reports). */
static int fixed(void)
{
    const char *e = getenv("KVQ_REPORT_FIXED_PROVENANCE");
    return e != NULL && strcmp(e, "1") == 0;
}

const char *kvq_commit(void)
{
    return fixed() ? KVQ_PROVENANCE_FIXED : KVQ_COMMIT;
}

/* "host <CPU model> (<machine>, <system> <release>)": the device of a
 * subject that runs on the host (ref-fast). */
void kvq_host_device(char *buf, size_t len)
{
    char model[128] = "";
    struct utsname u;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[256];
        while (model[0] == '\0' && fgets(line, sizeof line, f) != NULL) {
            char *colon = strchr(line, ':');
            if (colon == NULL || strncmp(line, "model name", 10) != 0) continue;
            for (colon++; *colon == ' ' || *colon == '\t'; colon++) {}
            colon[strcspn(colon, "\r\n")] = '\0';
            snprintf(model, sizeof model, "%s", colon);
        }
        fclose(f);
    }
    if (uname(&u) != 0) {
        snprintf(buf, len, "host %s", model[0] ? model : "(CPU model unknown)");
        return;
    }
    snprintf(buf, len, "host %s%s(%s, %s %s)", model, model[0] ? " " : "", u.machine, u.sysname, u.release);
}

/* The last content line of a vector file, when it is the end line: its
 * digest as "fnv1a64:<16 lowercase hex>" [VEC-FMT-07]; "none" otherwise (a
 * file written before kvq 0.2, read with a warning). */
static kvq_status end_digest(char *out, size_t outlen, const char *data, size_t len, const char *path,
                             char *err, size_t errlen)
{
    lines L = { 0 };
    char *s, *last = NULL;
    kvq_status st = lines_open(&L, data, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    while ((s = lines_next_content(&L)) != NULL) last = s;
    snprintf(out, outlen, "none");
    if (last != NULL) {
        char *tok[4];
        uint32_t hi, lo;
        while (*last == ' ' || *last == '\t') last++;
        if (tokenize(last, tok, 4) == 3 && strcmp(tok[0], "end") == 0 && strncmp(tok[2], "fnv1a64:", 8) == 0 &&
            strlen(tok[2]) == 24 && hexn(tok[2] + 8, 8, &hi) && hexn(tok[2] + 16, 8, &lo))
            snprintf(out, outlen, "fnv1a64:%08x%08x", (unsigned)hi, (unsigned)lo);
    }
    free(L.buf);
    return KVQ_OK;
}

kvq_status kvq_provenance_vectors(kvq_provenance *p, const char *vpath, const kvq_vfile *vf, char *err,
                                  size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st = read_file(&data, &len, vpath, err, errlen);
    if (st != KVQ_OK) return st;
    kvq_sha256_hex(data, len, p->vectors_sha256);
    st = end_digest(p->vectors_digest, sizeof p->vectors_digest, data, len, vpath, err, errlen);
    free(data);
    if (st != KVQ_OK) return st;
    snprintf(p->family, sizeof p->family, "%s", vf->family != NULL ? vf->family->name : "unknown");
    kvq_copy_utf8(p->level_set, sizeof p->level_set, vf->levels);
    snprintf(p->seed, sizeof p->seed, "0x%016llx", (unsigned long long)vf->seed);
    snprintf(p->vector_cases, sizeof p->vector_cases, "%zu", vf->ncases);
    return KVQ_OK;
}

/* Control characters of a subject's text as blanks, cut before a whole
 * character (the text goes into a line of the child's protocol and into
 * reports) [VER-REP-03]. */
static void copy_text(char *dst, size_t n, const char *src)
{
    kvq_copy_utf8(dst, n, src != NULL && src[0] ? src : "unknown");
    for (char *q = dst; *q; q++)
        if ((unsigned char)*q < 0x20u || *q == 0x7F) *q = ' ';
}

kvq_status kvq_provenance_subject(kvq_provenance *p, const char *subject, const kvq_subject_info *info,
                                  char *err, size_t errlen)
{
    snprintf(p->mode, sizeof p->mode, "subject");
    p->results_sha256[0] = '\0';
    copy_text(p->subject_version, sizeof p->subject_version, info != NULL ? info->version : NULL);
    copy_text(p->device, sizeof p->device, info != NULL ? info->device : NULL);
    if (fixed()) {
        snprintf(p->subject_file, sizeof p->subject_file, KVQ_PROVENANCE_FIXED);
        snprintf(p->subject_sha256, sizeof p->subject_sha256, KVQ_PROVENANCE_FIXED);
        snprintf(p->device, sizeof p->device, KVQ_PROVENANCE_FIXED);
        return KVQ_OK;
    }
    kvq_copy_utf8(p->subject_file, sizeof p->subject_file, subject);
    /* a built-in subject's bytes are kvq's own */
    return kvq_sha256_file(kvq_subject_builtin(subject) != NULL ? "/proc/self/exe" : subject, p->subject_sha256,
                           err, errlen);
}

kvq_status kvq_provenance_results(kvq_provenance *p, const char *rpath, char *err, size_t errlen)
{
    snprintf(p->mode, sizeof p->mode, "results");
    p->subject_file[0] = p->subject_sha256[0] = '\0';
    snprintf(p->subject_version, sizeof p->subject_version, "unknown");
    snprintf(p->device, sizeof p->device, "unknown");
    return kvq_sha256_file(rpath, p->results_sha256, err, errlen);
}

void kvq_provenance_judged(kvq_provenance *p, unsigned level_mask, const char *ops_spec,
                           const kvq_op *const *claimed, size_t nclaimed)
{
    size_t o = 0;
    snprintf(p->commit, sizeof p->commit, "%s", kvq_commit());
    snprintf(p->level, sizeof p->level, "%s",
             level_mask == KVQ_LEVELS_MASK(KVQ_LEVEL_EXACT)     ? kvq_level_name(KVQ_LEVEL_EXACT)
             : level_mask == KVQ_LEVELS_MASK(KVQ_LEVEL_BOUNDED) ? kvq_level_name(KVQ_LEVEL_BOUNDED)
                                                                : "all");
    if (ops_spec == NULL || strcmp(ops_spec, "all") == 0 || strcmp(ops_spec, "answered") == 0) {
        snprintf(p->claim, sizeof p->claim, "%s", ops_spec != NULL ? ops_spec : "all");
        return;
    }
    /* a list: its operations once each, in registry order, however spelt */
    p->claim[0] = '\0';
    for (size_t f = 0; f < kvq_family_count(); f++)
        for (size_t k = 0; k < kvq_family_at(f)->nops; k++) {
            const kvq_op *op = kvq_family_at(f)->ops[k];
            int in = 0;
            for (size_t i = 0; i < nclaimed && !in; i++) in = claimed[i] == op;
            if (in && o < sizeof p->claim)
                o += (size_t)snprintf(p->claim + o, sizeof p->claim - o, "%s%s", o ? "," : "", op->name);
        }
}
