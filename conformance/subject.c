/*
 * subject.c -- running a conformance subject in child processes [VER-RUN-*].
 *
 * The child loads the subject (built in, or a shared object through dlopen),
 * runs the cases from a start ordinal and sends one text line per result down
 * a pipe.  The parent collects the lines; when the child dies or stays silent
 * past the time limit, the case in flight gets status KVQ_E_SUBJECT and a new
 * child resumes with the next case.  The results file is written to a
 * temporary name and renamed at the end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"

/* ---- built-in subjects ---------------------------------------------------- */

/* ref-fast's self-description [VER-REP-05]: kvq's version; its device is the host. */
static const char *ref_fast_version(void)
{
    return KVQ_VERSION_STRING;
}

static int ref_fast_device(char *buf, size_t len)
{
    kvq_host_device(buf, len);
    return KVQ_OK;
}

/* ref-fast: the fast reference path of every registered family, each family
 * answering for its own entries. */
static kvq_entry_fn ref_fast_lookup(const char *entry, uint32_t sigver)
{
    if (sigver == 1u && strcmp(entry, KVQ_SUBJECT_VERSION_ENTRY) == 0) return (kvq_entry_fn)ref_fast_version;
    if (sigver == 1u && strcmp(entry, KVQ_SUBJECT_DEVICE_ENTRY) == 0) return (kvq_entry_fn)ref_fast_device;
    for (size_t i = 0; i < kvq_family_count(); i++) {
        const kvq_family *f = kvq_family_at(i);
        kvq_entry_fn fn = f->ref_entry != NULL ? f->ref_entry(entry, sigver) : NULL;
        if (fn != NULL) return fn;
    }
    return NULL;
}

static const kvq_subject_v3 ref_fast = {
    KVQ_SUBJECT_ABI_V3, "ref-fast", NULL, NULL, ref_fast_lookup,
};

const kvq_subject_v3 *kvq_subject_builtin(const char *name)
{
    if (strcmp(name, "ref-fast") == 0) return &ref_fast;
    return NULL;
}

/* ---- loading: ABI 3, and 1 and 2 through an adapter [API-SUBJ-05] ---------------- */

static kvq_entry_fn v3_lookup(const kvq_subject *s, const char *entry, uint32_t sigver)
{
    const kvq_subject_v3 *r = s->record;
    return r->lookup != NULL ? r->lookup(entry, sigver) : NULL;
}

/* A version-1 or -2 record's members under the entry names of ABI 3 (all of
 * signature version 1). */
static kvq_entry_fn v12_lookup(const kvq_subject *s, const char *entry, uint32_t sigver)
{
    const kvq_subject_v1 *v1 = s->record;
    const kvq_subject_v2 *v2 = s->abi == KVQ_SUBJECT_ABI_V2 ? (const kvq_subject_v2 *)s->record : NULL;
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "kivi_quantize") == 0) return (kvq_entry_fn)v1->kivi_quantize;
    if (strcmp(entry, "kivi_dequantize") == 0) return (kvq_entry_fn)v1->kivi_dequantize;
    if (v2 == NULL) return NULL;
    if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)v2->cert_quantize_keys;
    if (strcmp(entry, "cert_quantize_values") == 0) return (kvq_entry_fn)v2->cert_quantize_values;
    if (strcmp(entry, "cert_annotate") == 0) return (kvq_entry_fn)v2->cert_annotate;
    if (strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)v2->cert_step;
    return NULL;
}

/* A version-1 record has no entries of any family but KIVI [VER-CERT-03]. */
static const char *v1_missing(const kvq_subject *s, const kvq_op *op, const char *entry)
{
    static char why[96];
    (void)s;
    (void)entry;
    snprintf(why, sizeof why, "subject-abi-1-has-no-%s-entries", op->family->name);
    return why;
}

static void adopt_v3(kvq_subject *s, const kvq_subject_v3 *r)
{
    memset(s, 0, sizeof *s);
    s->name = r->name, s->abi = r->abi, s->init = r->init, s->fini = r->fini;
    s->lookup = v3_lookup, s->record = r;
}

int kvq_subject_load(kvq_subject *s, const char *subject, char *msg, size_t msglen)
{
    const kvq_subject_v3 *b = kvq_subject_builtin(subject);
    void *h;
    kvq_subject_abi3_fn abi3;
    kvq_subject_entry_fn entry;
    const kvq_subject_v1 *api;
    if (b != NULL) {
        adopt_v3(s, b);
        return 1;
    }
    if (strchr(subject, '/') == NULL) {
        snprintf(msg, msglen, "unknown built-in subject '%s' (a plug-in path needs a '/')", subject);
        return 0;
    }
    h = dlopen(subject, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(msg, msglen, "cannot load %s: %s", subject, dlerror());
        return 0;
    }
    /* POSIX returns every symbol as a data pointer; its bytes are the function's */
    *(void **)(&abi3) = dlsym(h, KVQ_SUBJECT_ABI3_ENTRY);
    if (abi3 != NULL) {
        const kvq_subject_v3 *r = abi3();
        if (r == NULL || r->abi != KVQ_SUBJECT_ABI_V3 || r->name == NULL || r->lookup == NULL) {
            snprintf(msg, msglen, "%s: %s() returned no usable kvq_subject_v3 record (abi %u, a name and a lookup expected)",
                     subject, KVQ_SUBJECT_ABI3_ENTRY, KVQ_SUBJECT_ABI_V3);
            return 0;
        }
        adopt_v3(s, r);
        return 1;
    }
    *(void **)(&entry) = dlsym(h, KVQ_SUBJECT_ENTRY);
    if (entry == NULL) {
        snprintf(msg, msglen, "%s exports neither %s() nor %s()", subject, KVQ_SUBJECT_ABI3_ENTRY,
                 KVQ_SUBJECT_ENTRY);
        return 0;
    }
    api = entry();
    if (api == NULL || (api->abi != KVQ_SUBJECT_ABI_V1 && api->abi != KVQ_SUBJECT_ABI_V2) ||
        api->kivi_quantize == NULL || api->kivi_dequantize == NULL || api->name == NULL) {
        snprintf(msg, msglen, "%s: %s() returned no usable kvq_subject record (abi %u or %u expected)",
                 subject, KVQ_SUBJECT_ENTRY, KVQ_SUBJECT_ABI_V1, KVQ_SUBJECT_ABI_V2);
        return 0;
    }
    memset(s, 0, sizeof *s);
    s->name = api->name, s->abi = api->abi, s->init = api->init, s->fini = api->fini;
    s->lookup = v12_lookup, s->record = api;
    if (api->abi == KVQ_SUBJECT_ABI_V1) s->missing = v1_missing;
    return 1;
}

/* ---- child side --------------------------------------------------------------- */

static void child_say(FILE *out, const char *fmt, const char *arg)
{
    fprintf(out, fmt, arg);
    fflush(out);
}

/* One case [VER-RUN-01] [VER-CERT-02]: the subject's entries for the
 * operation, or a skip naming the first it lacks.  Outputs are pre-filled
 * with a sentinel so that a subject that reports success without writing is
 * caught by the comparison. */
static void child_case(FILE *out, const kvq_subject *s, const kvq_case *c)
{
    const kvq_op *op = c->op;
    kvq_entry_fn fns[KVQ_OP_MAX_ENTRIES];
    void *o;
    uint32_t flags = 0;
    int st;
    for (uint32_t i = 0; i < op->nentries; i++) {
        const kvq_entry_decl *e = &op->entries[i];
        fns[i] = s->lookup(s, e->name, e->sigver);
        if (fns[i] == NULL && e->older != 0u && (e->older_variants >> c->variant & 1u))
            fns[i] = s->lookup(s, e->name, e->older);
        if (fns[i] == NULL) {
            char why[160];
            if (e->older != 0u && s->lookup(s, e->name, e->older) != NULL)
                snprintf(why, sizeof why, "subject-%s-v%u-predates-variant-%s", e->name, e->older,
                         op->nvariants ? op->variants[c->variant] : "default");
            else if (s->missing != NULL) snprintf(why, sizeof why, "%s", s->missing(s, op, e->name));
            else snprintf(why, sizeof why, "subject-has-no-%s", e->name);
            kvq_res_write_skip(out, c->id, why);
            fflush(out);
            return;
        }
    }
    o = kvq_out_sentinel(c);
    st = o != NULL ? op->call(c, fns, o, &flags) : KVQ_E_NOMEM;
    if (st != KVQ_OK && o != NULL && kvq_out_touched(c, o, flags) != NULL)
        /* a failed call writes nothing [API-ERR-01] */
        kvq_res_write_touched(out, c, st, kvq_out_touched(c, o, flags));
    else
        kvq_res_write(out, c, st, flags, o);
    fflush(out);
    if (o != NULL) kvq_out_free(op, o);
}

/* The subject's optional self-description [VER-REP-05], after init: one
 * "version <text>" and one "device <text>" line (control characters as
 * blanks, so that a line stays a line). */
static void child_describe(FILE *out, const kvq_subject *s)
{
    kvq_entry_fn fv = s->lookup(s, KVQ_SUBJECT_VERSION_ENTRY, 1u), fd = s->lookup(s, KVQ_SUBJECT_DEVICE_ENTRY, 1u);
    char text[192] = "";
    if (fv != NULL) {
        const char *v = ((kvq_subject_version_v1_fn)fv)();
        if (v != NULL) snprintf(text, sizeof text, "%s", v);
    }
    for (char *q = text; *q; q++)
        if ((unsigned char)*q < 0x20u || *q == 0x7F) *q = ' ';
    if (text[0]) child_say(out, "version %s\n", text);
    text[0] = '\0';
    if (fd != NULL && ((kvq_subject_device_v1_fn)fd)(text, sizeof text) != KVQ_OK) text[0] = '\0';
    text[sizeof text - 1] = '\0';
    for (char *q = text; *q; q++)
        if ((unsigned char)*q < 0x20u || *q == 0x7F) *q = ' ';
    if (text[0]) child_say(out, "device %s\n", text);
}

static void child_main(int fd, const char *subject, const kvq_vfile *vf, size_t start)
{
    FILE *out = fdopen(fd, "w");
    kvq_subject s;
    char why[256] = "", msg[512];
    if (out == NULL) _exit(3);
    if (!kvq_subject_load(&s, subject, msg, sizeof msg)) {
        child_say(out, "error %s\n", msg);
        _exit(3);
    }
    child_say(out, "name %s\n", s.name);
    if (s.init != NULL) {
        int st = s.init(why, sizeof why);
        if (st == KVQ_E_NODEVICE) {
            child_say(out, "unavailable %s\n", why[0] ? why : "no device");
            _exit(0);
        }
        if (st != KVQ_OK) {
            snprintf(msg, sizeof msg, "subject init failed with %s: %s", kvq_status_name(st), why);
            child_say(out, "error %s\n", msg);
            _exit(3);
        }
    }
    child_describe(out, &s);
    for (size_t k = start; k < vf->ncases; k++) child_case(out, &s, &vf->cases[k]);
    if (s.fini != NULL) s.fini();
    child_say(out, "done%s\n", "");
    fclose(out);
    _exit(0);
}

/* ---- parent side ----------------------------------------------------------------- */

typedef struct text {
    char *buf;
    size_t len, cap;
} text;

static int text_add(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 65536;
        char *nb;
        while (cap < t->len + n + 1) cap *= 2;
        nb = realloc(t->buf, cap);
        if (nb == NULL) return 0;
        t->buf = nb;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return 1;
}

typedef struct runstate {
    text results;        /* result lines and comments, in order */
    char name[64];
    kvq_subject_info info; /* the first child's "version" and "device" lines */
    char unavailable[256];
    char error[512];
    size_t next;         /* ordinal of the next case without a result */
    int done;
    kvq_progress *pg;
} runstate;

/* Handle one line from the child. */
static int on_line(runstate *rs, const kvq_vfile *vf, char *line)
{
    if (strncmp(line, "name ", 5) == 0) {
        if (!rs->name[0]) kvq_copy_utf8(rs->name, sizeof rs->name, line + 5);
    } else if (strncmp(line, "version ", 8) == 0) {
        if (!rs->info.version[0]) kvq_copy_utf8(rs->info.version, sizeof rs->info.version, line + 8);
    } else if (strncmp(line, "device ", 7) == 0) {
        if (!rs->info.device[0]) kvq_copy_utf8(rs->info.device, sizeof rs->info.device, line + 7);
    } else if (strncmp(line, "unavailable ", 12) == 0) {
        kvq_copy_utf8(rs->unavailable, sizeof rs->unavailable, line + 12);
        rs->done = 1;
    } else if (strncmp(line, "error ", 6) == 0) {
        snprintf(rs->error, sizeof rs->error, "%s", line + 6);
        rs->done = 1;
    } else if (strcmp(line, "done") == 0) {
        rs->done = 1;
    } else if (strncmp(line, "result ", 7) == 0 && rs->next < vf->ncases) {
        if (!text_add(&rs->results, line, strlen(line)) || !text_add(&rs->results, "\n", 1))
            return 0;
        rs->next++;
        kvq_progress_tick(rs->pg, rs->next, vf->ncases);
    }
    return 1;
}

/* The case in flight died or hung: record it and move on. */
static int lost_case(runstate *rs, const kvq_vfile *vf, const char *how)
{
    char line[256];
    const char *id = vf->cases[rs->next].id;
    int n = snprintf(line, sizeof line, "# %s: subject %s\nresult id=%s status=%d\n", id, how, id,
                     KVQ_E_SUBJECT);
    rs->next++;
    return n > 0 && text_add(&rs->results, line, (size_t)n);
}

static kvq_status run_child(runstate *rs, const char *subject, const kvq_vfile *vf,
                            unsigned timeout_s)
{
    int fds[2], wstatus = 0, killed = 0;
    pid_t pid;
    char buf[65536];
    text pending = { 0 };
    if (pipe(fds) != 0) return KVQ_E_IO;
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return KVQ_E_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], subject, vf, rs->next);
    }
    close(fds[1]);
    for (;;) {
        struct pollfd p = { fds[0], POLLIN, 0 };
        int pr = poll(&p, 1, (int)(timeout_s * 1000u));
        ssize_t got;
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) { /* silent past the limit: a hang */
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (!text_add(&pending, buf, (size_t)got)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(fds[0]);
            free(pending.buf);
            return KVQ_E_NOMEM;
        }
        for (;;) { /* complete lines only */
            char *nl = memchr(pending.buf, '\n', pending.len);
            size_t used;
            if (nl == NULL) break;
            *nl = '\0';
            if (!on_line(rs, vf, pending.buf)) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                close(fds[0]);
                free(pending.buf);
                return KVQ_E_NOMEM;
            }
            used = (size_t)(nl - pending.buf) + 1;
            memmove(pending.buf, pending.buf + used, pending.len - used);
            pending.len -= used;
        }
    }
    close(fds[0]);
    free(pending.buf);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {}
    if (rs->done) return KVQ_OK;
    if (rs->next < vf->ncases) {
        char how[96];
        if (killed)
            snprintf(how, sizeof how, "gave no result within %u s (hang; killed)", timeout_s);
        else if (WIFSIGNALED(wstatus))
            snprintf(how, sizeof how, "terminated by signal %d (%s)", WTERMSIG(wstatus),
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(how, sizeof how, "exited with status %d mid-run", WEXITSTATUS(wstatus));
        if (!lost_case(rs, vf, how)) return KVQ_E_NOMEM;
    }
    return KVQ_OK;
}

kvq_status kvq_run_subject(const char *subject, const kvq_vfile *vf, const char *out,
                           unsigned timeout_s, char *err, size_t errlen)
{
    return kvq_run_subject_progress(subject, vf, out, timeout_s, NULL, err, errlen);
}

kvq_status kvq_run_subject_progress(const char *subject, const kvq_vfile *vf, const char *out,
                                    unsigned timeout_s, kvq_progress *pg, char *err, size_t errlen)
{
    return kvq_run_subject_info(subject, vf, out, timeout_s, pg, NULL, err, errlen);
}

kvq_status kvq_run_subject_info(const char *subject, const kvq_vfile *vf, const char *out,
                                unsigned timeout_s, kvq_progress *pg, kvq_subject_info *info,
                                char *err, size_t errlen)
{
    runstate rs;
    kvq_outfile of;
    kvq_status st = KVQ_OK;
    memset(&rs, 0, sizeof rs);
    rs.pg = pg;
    while (rs.next < vf->ncases && !rs.done) {
        size_t before = rs.next;
        st = run_child(&rs, subject, vf, timeout_s);
        if (st != KVQ_OK) break;
        if (rs.error[0]) {
            snprintf(err, errlen, "%s", rs.error);
            free(rs.results.buf);
            return KVQ_E_SUBJECT;
        }
        if (rs.done && rs.next < vf->ncases && !rs.unavailable[0]) {
            /* "done" before every case had a result: the subject broke the protocol. */
            snprintf(err, errlen, "subject finished with %zu of %zu results", rs.next, vf->ncases);
            free(rs.results.buf);
            return KVQ_E_SUBJECT;
        }
        if (rs.next == before && !rs.done) { /* no progress at all: give up */
            snprintf(err, errlen, "subject made no progress");
            free(rs.results.buf);
            return KVQ_E_SUBJECT;
        }
        rs.done = rs.unavailable[0] != 0;
    }
    if (st != KVQ_OK) {
        snprintf(err, errlen, "running the subject: %s", kvq_status_str(st));
        free(rs.results.buf);
        return st;
    }
    kvq_progress_end(pg);
    if ((st = kvq_outfile_open(&of, out, err, errlen)) != KVQ_OK) {
        free(rs.results.buf);
        return st;
    }
    kvq_res_write_header(of.f, rs.name[0] ? rs.name : subject,
                         rs.unavailable[0] ? rs.unavailable : NULL);
    if (rs.results.len && !rs.unavailable[0]) fwrite(rs.results.buf, 1, rs.results.len, of.f);
    free(rs.results.buf);
    if ((st = kvq_outfile_commit(&of, err, errlen)) != KVQ_OK) return st;
    if (info != NULL) {
        snprintf(info->version, sizeof info->version, "%s", rs.info.version[0] ? rs.info.version : "unknown");
        snprintf(info->device, sizeof info->device, "%s", rs.info.device[0] ? rs.info.device : "unknown");
    }
    return KVQ_OK;
}
