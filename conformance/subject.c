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

static int fast_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                         const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
}

static int fast_dequantize(float *y, uint32_t *flags, const uint8_t *codes, const float *scale,
                           const float *zero, const kvq_kivi_shape *shape,
                           const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}

/* CERT entries of ref-fast: the fast path's quantizers and step.  The step
 * quantizes K and V itself (its own quantizers, as any subject does) and runs
 * kvq_cert_step over the cache it built. */
static int fast_cert_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                          const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static int fast_cert_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *v, const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static int fast_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                              const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

static int fast_cert_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                          kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                          const float *k, const float *v, const kvq_cert_params *prm,
                          const kvq_cert_shape *sh, const kvq_policy *pol)
{
    kvq_cert_cache ch;
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    uint32_t fl;
    kvq_status st;
    if (sh == NULL || pol == NULL) return KVQ_E_PARAM;
    /* Sizes from the shape as given; an invalid shape is rejected by the first
     * quantizer call before anything is read or written. */
    kc = malloc(kvq_cert_key_code_bytes(sh) + 1);
    sigma = malloc(kvq_cert_key_meta_count(sh) * sizeof *sigma + 1);
    z = malloc(kvq_cert_key_meta_count(sh) * sizeof *z + 1);
    vc = malloc(kvq_cert_value_code_bytes(sh) + 1);
    vs = malloc(kvq_cert_value_groups(sh) * sizeof *vs + 1);
    vz = malloc(kvq_cert_value_groups(sh) * sizeof *vz + 1);
    eta = malloc(kvq_cert_blocks(sh) * sizeof *eta + 1);
    nu = malloc(kvq_cert_blocks(sh) * sizeof *nu + 1);
    st = (kc && sigma && z && vc && vs && vz && eta && nu) ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_cert_quantize_keys(kc, sigma, z, &fl, k, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(vc, vs, vz, &fl, v, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(eta, nu, v, vc, vs, vz, sh);
    if (st == KVQ_OK) {
        ch.k = k, ch.v = v, ch.kcodes = kc, ch.sigma = sigma, ch.z = z;
        ch.vcodes = vc, ch.vscale = vs, ch.vzero = vz, ch.eta = eta, ch.nu = nu;
        st = kvq_cert_step(out, sel, prom, NULL, rec, decl, delta1, q, scale, &ch, prm, sh);
    }
    free(kc), free(sigma), free(z), free(vc), free(vs), free(vz), free(eta), free(nu);
    return st;
}

static const kvq_subject_v2 ref_fast = {
    { KVQ_SUBJECT_ABI_V2, "ref-fast", NULL, fast_quantize, fast_dequantize, NULL },
    fast_cert_keys, fast_cert_values, fast_cert_annotate, fast_cert_step,
};

const kvq_subject_v1 *kvq_subject_builtin(const char *name)
{
    if (strcmp(name, "ref-fast") == 0) return &ref_fast.v1;
    return NULL;
}

/* ---- child side --------------------------------------------------------------- */

static void child_say(FILE *out, const char *fmt, const char *arg)
{
    fprintf(out, fmt, arg);
    fflush(out);
}

static const kvq_subject_v1 *child_load(FILE *out, const char *subject)
{
    const kvq_subject_v1 *api = kvq_subject_builtin(subject);
    void *h;
    kvq_subject_entry_fn entry;
    char msg[512];
    if (api != NULL) return api;
    if (strchr(subject, '/') == NULL) {
        snprintf(msg, sizeof msg, "unknown built-in subject '%s' (a plug-in path needs a '/')",
                 subject);
        child_say(out, "error %s\n", msg);
        return NULL;
    }
    h = dlopen(subject, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(msg, sizeof msg, "cannot load %s: %s", subject, dlerror());
        child_say(out, "error %s\n", msg);
        return NULL;
    }
    *(void **)(&entry) = dlsym(h, KVQ_SUBJECT_ENTRY);
    if (entry == NULL) {
        snprintf(msg, sizeof msg, "%s exports no %s()", subject, KVQ_SUBJECT_ENTRY);
        child_say(out, "error %s\n", msg);
        return NULL;
    }
    api = entry();
    if (api == NULL || (api->abi != KVQ_SUBJECT_ABI_V1 && api->abi != KVQ_SUBJECT_ABI_V2) ||
        api->kivi_quantize == NULL || api->kivi_dequantize == NULL || api->name == NULL) {
        snprintf(msg, sizeof msg, "%s: %s() returned no usable kvq_subject record (abi %u or %u expected)",
                 subject, KVQ_SUBJECT_ENTRY, KVQ_SUBJECT_ABI_V1, KVQ_SUBJECT_ABI_V2);
        child_say(out, "error %s\n", msg);
        return NULL;
    }
    return api;
}

/* Outputs are pre-filled with a sentinel so that a subject that reports
 * success without writing is caught by the comparison. */
static void child_case(FILE *out, const kvq_subject_v1 *api, const kvq_vcase *c)
{
    const kvq_kivi_shape *s = &c->shape;
    uint64_t n = kvq_kivi_elems(s), ng = kvq_kivi_groups(s), nb = kvq_kivi_code_bytes(s);
    kvq_rout o;
    uint32_t flags = 0, dflags = 0;
    int st;
    memset(&o, 0, sizeof o); /* kvq_rout_free frees every member */
    o.codes = malloc(nb ? nb : 1);
    o.scale = malloc((ng ? ng : 1) * sizeof *o.scale);
    o.zero = malloc((ng ? ng : 1) * sizeof *o.zero);
    o.deq = malloc((n ? n : 1) * sizeof *o.deq);
    if (!o.codes || !o.scale || !o.zero || !o.deq) {
        kvq_res_write_case(out, c->id, KVQ_E_NOMEM, 0, &o, s);
        kvq_rout_free(&o);
        return;
    }
    memset(o.codes, 0xA5, nb ? nb : 1);
    memset(o.scale, 0xA5, (ng ? ng : 1) * sizeof *o.scale);
    memset(o.zero, 0xA5, (ng ? ng : 1) * sizeof *o.zero);
    memset(o.deq, 0xA5, (n ? n : 1) * sizeof *o.deq);
    st = api->kivi_quantize(o.codes, o.scale, o.zero, &flags, c->x, s, &c->pol);
    if (st == KVQ_OK) {
        st = api->kivi_dequantize(o.deq, &dflags, o.codes, o.scale, o.zero, s, &c->pol);
        flags |= dflags;
    }
    kvq_res_write_case(out, c->id, st, flags, &o, s);
    fflush(out);
    kvq_rout_free(&o);
}

/* Fill n bytes with the sentinel (at least one byte allocated). */
static void *sentinel(uint64_t n)
{
    void *p = malloc(n ? n : 1);
    if (p != NULL) memset(p, 0xA5, n ? n : 1);
    return p;
}

/* A CERT case [VER-CERT-02]: the subject's entry for the operation, or a skip
 * when it has none (a version-1 subject has none). */
static void child_cert_case(FILE *out, const kvq_subject_v2 *api, const kvq_vcase *c)
{
    const kvq_cert_shape *s = &c->cshape;
    uint32_t nbl = kvq_cert_blocks(s), flags = 0;
    int v1 = api->v1.abi == KVQ_SUBJECT_ABI_V1, st;
    kvq_rout o;
    memset(&o, 0, sizeof o);
    if (c->op == KVQ_OP_CERT_KEYS) {
        uint64_t nm = kvq_vcase_cert_meta_count(c);
        if (api->cert_quantize_keys == NULL) {
            kvq_res_write_skip(out, c->id, v1 ? "subject-abi-1-has-no-cert-entries" : "subject-has-no-cert_quantize_keys");
            goto done;
        }
        o.codes = sentinel(kvq_vcase_cert_code_bytes(c));
        o.scale = sentinel(nm * sizeof(float)), o.zero = sentinel(nm * sizeof(float));
        st = (o.codes && o.scale && o.zero) ? api->cert_quantize_keys((int8_t *)o.codes, o.scale, o.zero, &flags, c->x, s, &c->pol)
                                            : KVQ_E_NOMEM;
    } else if (c->op == KVQ_OP_CERT_VALUES) {
        uint64_t nm = kvq_vcase_cert_meta_count(c);
        if (api->cert_quantize_values == NULL || api->cert_annotate == NULL) {
            kvq_res_write_skip(out, c->id, v1 ? "subject-abi-1-has-no-cert-entries"
                                         : api->cert_quantize_values == NULL ? "subject-has-no-cert_quantize_values"
                                                                             : "subject-has-no-cert_annotate");
            goto done;
        }
        o.codes = sentinel(kvq_vcase_cert_code_bytes(c));
        o.scale = sentinel(nm * sizeof(float)), o.zero = sentinel(nm * sizeof(float));
        o.eta = sentinel(nbl * sizeof(float)), o.nu = sentinel(nbl * sizeof(float));
        st = (o.codes && o.scale && o.zero && o.eta && o.nu)
                 ? api->cert_quantize_values(o.codes, o.scale, o.zero, &flags, c->x, s, &c->pol)
                 : KVQ_E_NOMEM;
        if (st == KVQ_OK) st = api->cert_annotate(o.eta, o.nu, c->x, o.codes, o.scale, o.zero, s);
    } else {
        if (api->cert_step == NULL) {
            kvq_res_write_skip(out, c->id, v1 ? "subject-abi-1-has-no-cert-entries" : "subject-has-no-cert_step");
            goto done;
        }
        o.out = sentinel((uint64_t)s->dim * sizeof(float));
        o.sel = sentinel(nbl), o.prom = sentinel(nbl);
        memset(&o.rec, 0xA5, sizeof o.rec);
        memset(&o.decl, 0xA5, sizeof o.decl);
        memset(&o.delta1, 0xA5, sizeof o.delta1);
        st = (o.out && o.sel && o.prom) ? api->cert_step(o.out, o.sel, o.prom, &o.rec, &o.decl, &o.delta1, c->q,
                                                         c->qscale, c->x, c->vin, &c->prm, s, &c->pol)
                                        : KVQ_E_NOMEM;
    }
    kvq_res_write_cert(out, c, st, flags, &o);
done:
    fflush(out);
    kvq_rout_free(&o);
}

static void child_main(int fd, const char *subject, const kvq_vfile *vf, size_t start)
{
    FILE *out = fdopen(fd, "w");
    const kvq_subject_v1 *api;
    kvq_subject_v2 view;
    char why[256] = "";
    if (out == NULL) _exit(3);
    api = child_load(out, subject);
    if (api == NULL) _exit(3);
    child_say(out, "name %s\n", api->name);
    if (api->init != NULL) {
        int st = api->init(why, sizeof why);
        if (st == KVQ_E_NODEVICE) {
            child_say(out, "unavailable %s\n", why[0] ? why : "no device");
            _exit(0);
        }
        if (st != KVQ_OK) {
            char msg[400];
            snprintf(msg, sizeof msg, "subject init failed with %s: %s", kvq_status_name(st), why);
            child_say(out, "error %s\n", msg);
            _exit(3);
        }
    }
    /* One view of both versions: a v1 record has no CERT entries. */
    memset(&view, 0, sizeof view);
    if (api->abi == KVQ_SUBJECT_ABI_V2) view = *(const kvq_subject_v2 *)(const void *)api;
    else view.v1 = *api;
    for (size_t k = start; k < vf->ncases; k++) {
        if (vf->cases[k].op == KVQ_OP_KIVI_QUANT) child_case(out, api, &vf->cases[k]);
        else child_cert_case(out, &view, &vf->cases[k]);
    }
    if (api->fini != NULL) api->fini();
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
    char unavailable[256];
    char error[512];
    size_t next;         /* ordinal of the next case without a result */
    int done;
} runstate;

/* Handle one line from the child. */
static int on_line(runstate *rs, const kvq_vfile *vf, char *line)
{
    if (strncmp(line, "name ", 5) == 0) {
        if (!rs->name[0]) snprintf(rs->name, sizeof rs->name, "%s", line + 5);
    } else if (strncmp(line, "unavailable ", 12) == 0) {
        snprintf(rs->unavailable, sizeof rs->unavailable, "%s", line + 12);
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
    runstate rs;
    char tmp[1024];
    FILE *f;
    kvq_status st = KVQ_OK;
    int bad;
    memset(&rs, 0, sizeof rs);
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
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        free(rs.results.buf);
        return KVQ_E_IO;
    }
    kvq_res_write_header(f, rs.name[0] ? rs.name : subject,
                         rs.unavailable[0] ? rs.unavailable : NULL);
    if (rs.results.len && !rs.unavailable[0]) fwrite(rs.results.buf, 1, rs.results.len, f);
    bad = ferror(f);
    free(rs.results.buf);
    if (fclose(f) != 0 || bad || rename(tmp, out) != 0) {
        remove(tmp);
        snprintf(err, errlen, "%s: write failed", out);
        return KVQ_E_IO;
    }
    return KVQ_OK;
}
