/*
 * check_html.c -- Check suite for the HTML report (conformance/html.c,
 * spec/verify.md [VER-REP-04]).
 *
 * Reports are built in memory from fake cases of real operations
 * (kvq_op_find("kivi-quant"), kvq_op_find("cert-step")) with verdicts and
 * margins set by hand, written with kvq_report_html and read back.  Every
 * expected count is computed here from the verdicts, not from the writer.
 *
 * KVQ_RANDOM_CASES sets the size of the large report (default 100), KVQ_SEED
 * its draws; KVQ_HTML_SAMPLE=PATH also writes that report to PATH (how the
 * sample page to look at is made).
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "conf.h"

static uint64_t seed = 0x6b7671u, ncases = 100u;

/* ---- fake reports --------------------------------------------------------------- */

typedef struct fake {
    kvq_verify_report rep;
    kvq_case *c;
    size_t cap;
} fake;

static void fake_init(fake *f, size_t cap, const char *subject, const char *claimed)
{
    memset(f, 0, sizeof *f);
    f->cap = cap;
    f->c = calloc(cap ? cap : 1, sizeof *f->c);
    f->rep.v = calloc(cap ? cap : 1, sizeof *f->rep.v);
    ck_assert_ptr_nonnull(f->c);
    ck_assert_ptr_nonnull(f->rep.v);
    snprintf(f->rep.subject, sizeof f->rep.subject, "%s", subject);
    snprintf(f->rep.vectors, sizeof f->rep.vectors, "build/demo/kivi-standard.vec");
    snprintf(f->rep.claimed, sizeof f->rep.claimed, "%s", claimed);
}

/* Add a case and its verdict; margins are added by the caller. */
static kvq_verdict *fake_add(fake *f, const char *op, const char *id, uint32_t level, long line,
                             int outcome, const char *detail)
{
    kvq_case *c;
    kvq_verdict *v;
    ck_assert_uint_lt(f->rep.n, f->cap);
    c = &f->c[f->rep.n];
    v = &f->rep.v[f->rep.n++];
    c->op = kvq_op_find(op);
    ck_assert_ptr_nonnull(c->op);
    snprintf(c->id, sizeof c->id, "%s", id);
    c->level = level, c->line = line;
    v->vc = c, v->outcome = outcome;
    snprintf(v->detail, sizeof v->detail, "%s", detail ? detail : "");
    if (outcome == KVQ_PASS) f->rep.passed++;
    else if (outcome == KVQ_FAIL) f->rep.failed++;
    else f->rep.skipped++;
    return v;
}

static void fake_free(fake *f)
{
    free(f->c);
    free(f->rep.v);
}

/* ---- files -------------------------------------------------------------------------- */

static char dir[64];

static void setup_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/kvq-check-html.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static size_t dir_entries(const char *d)
{
    DIR *dp = opendir(d);
    struct dirent *e;
    size_t n = 0;
    ck_assert_ptr_nonnull(dp);
    while ((e = readdir(dp)) != NULL) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dp);
    return n;
}

static void teardown_dir(void)
{
    ck_assert_uint_eq(dir_entries(dir), 0); /* every test removes what it wrote */
    rmdir(dir);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Write the page to a file of the test's directory, read it back, remove it. */
static char *render(const kvq_verify_report *rep, size_t *len)
{
    char path[128], err[512];
    char *text;
    snprintf(path, sizeof path, "%s/report.html", dir);
    err[0] = '\0';
    ck_assert_msg(kvq_report_html(path, rep, err, sizeof err) == KVQ_OK, "kvq_report_html: %s", err);
    text = slurp(path, len);
    ck_assert_uint_eq(strlen(text), *len); /* no NUL byte */
    remove(path);
    return text;
}

/* ---- what a page must be ------------------------------------------------------------ */

static size_t count(const char *s, const char *what)
{
    size_t n = 0, k = strlen(what);
    for (const char *p = strstr(s, what); p != NULL; p = strstr(p + k, what)) n++;
    return n;
}

static void has(const char *page, const char *what)
{
    ck_assert_msg(strstr(page, what) != NULL, "the page lacks \"%s\"", what);
}

static void lacks(const char *page, const char *what)
{
    ck_assert_msg(strstr(page, what) == NULL, "the page holds \"%s\"", what);
}

/* Valid UTF-8 throughout, and no control character but tab and newline. */
static void check_utf8(const char *page, size_t len)
{
    const unsigned char *s = (const unsigned char *)page;
    for (size_t i = 0; i < len;) {
        size_t k = kvq_utf8_seq(s + i);
        ck_assert_msg(k > 0, "invalid UTF-8 at byte %zu", i);
        ck_assert_msg(k > 1 || s[i] >= 0x20 || s[i] == '\n' || s[i] == '\t', "control byte 0x%02x at %zu",
                      s[i], i);
        i += k;
    }
}

/* Every element but the void ones closed in order: since every text is
 * escaped, a '<' only ever starts a tag.  Also: no script, nothing loaded. */
static void check_balanced(const char *page)
{
    static const char *const voids[] = { "meta", "br", "hr", "img", "input", "link", "wbr" };
    char stack[128][16];
    size_t depth = 0;
    ck_assert_msg(strncmp(page, "<!DOCTYPE html>\n", 16) == 0, "no doctype");
    for (const char *p = strchr(page, '<'); p != NULL; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        char name[16];
        size_t n = 0;
        int closing = p[1] == '/';
        ck_assert_ptr_nonnull(end);
        if (p[1] == '!') continue;
        for (const char *q = p + 1 + closing; (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'); q++) {
            ck_assert_uint_lt(n, sizeof name - 1);
            name[n++] = *q;
        }
        name[n] = '\0';
        ck_assert_msg(n > 0, "a '<' that starts no tag: %.20s", p);
        if (closing) {
            ck_assert_msg(depth > 0 && strcmp(stack[depth - 1], name) == 0, "</%s> closes <%s>", name,
                          depth ? stack[depth - 1] : "nothing");
            depth--;
            continue;
        }
        if (end[-1] == '/') continue;
        {
            int v = 0;
            for (size_t i = 0; i < KVQ_NELEMS(voids); i++) v |= strcmp(name, voids[i]) == 0;
            if (v) continue;
        }
        ck_assert_uint_lt(depth, 128);
        memcpy(stack[depth++], name, n + 1);
    }
    ck_assert_msg(depth == 0, "<%s> left open", depth ? stack[depth - 1] : "");
    lacks(page, "<script");
    lacks(page, "src=");
    lacks(page, "href=");
    lacks(page, "url(");
    lacks(page, "@import");
    ck_assert_uint_eq(count(page, "http"), count(page, "xmlns=\"http://www.w3.org/2000/svg\""));
}

static void check_page(const char *page, size_t len)
{
    check_utf8(page, len);
    check_balanced(page);
}

/* ---- a small report, every number known ------------------------------------------------ */

static const char Q_DEQ[] = "deq error [KIVI-B-03]";
static const char Q_OUT[] = "output error [CERT-CON-02]";

/* 9 cases: kivi-quant 3 exact (2 pass, 1 fail), 4 bounded (3 pass, 1 fail over
 * its bound); cert-step 1 bounded pass, 1 skipped.  Closest deq case: k-b-fail
 * (bound/error 0.5); one deq error of 0. */
static void small_report(fake *f)
{
    kvq_verdict *v;
    /* The margins below are report data (an error and its bound per case) that
     * the page must draw and count, not tolerances of a comparison: each is
     * chosen on one side of error = bound, and the asserted counts follow. */
    fake_init(f, 16, "ref-fast", "kivi-quant,cert-step");
    fake_add(f, "kivi-quant", "k-e-1", KVQ_LEVEL_EXACT, 3, KVQ_PASS, NULL);
    fake_add(f, "kivi-quant", "k-e-2", KVQ_LEVEL_EXACT, 4, KVQ_PASS, NULL);
    fake_add(f, "kivi-quant", "k-e-fail", KVQ_LEVEL_EXACT, 5, KVQ_FAIL,
             "codes: expected 0x3f800000 (0x1p+0), got 0x3f800001 (0x1.000002p+0) [API-ERR-01]");
    v = fake_add(f, "kivi-quant", "k-b-1", KVQ_LEVEL_BOUNDED, 6, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 1e-7, 1e-5);
    v = fake_add(f, "kivi-quant", "k-b-2", KVQ_LEVEL_BOUNDED, 7, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 0.0, 1e-6);
    v = fake_add(f, "kivi-quant", "k-b-3", KVQ_LEVEL_BOUNDED, 8, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 2e-6, 4e-6);
    v = fake_add(f, "kivi-quant", "k-b-fail", KVQ_LEVEL_BOUNDED, 9, KVQ_FAIL,
                 "deq of element 3: 0x3f800001 (0x1.000002p+0) is 2.000e-06 from code*scale+zero "
                 "(code 0x5), bound 1.000e-06 [KIVI-B-03]; 1 of 64 elements fail");
    kvq_verdict_margin(v, Q_DEQ, 2e-6, 1e-6);
    v = fake_add(f, "cert-step", "c-1", KVQ_LEVEL_BOUNDED, 10, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_OUT, 3e-4, 2e-2);
    fake_add(f, "cert-step", "c-skip", KVQ_LEVEL_BOUNDED, 11, KVQ_SKIP, "subject-has-no-cert_step");
}

START_TEST(counts_failures_and_plots)
{
    /* SPEC: [VER-REP-04] -- header, counts per family/operation/level/requirement, the failures
     * with their detail, one plot per margin quantity with its caption. */
    fake f;
    size_t len;
    char *page;
    small_report(&f);
    page = render(&f.rep, &len);
    check_page(page, len);
    /* header */
    has(page, "<div class=\"verdict FAIL\" id=\"verdict\">FAIL</div>");
    has(page, "<td id=\"counts\">6 passed, 2 failed, 1 skipped ");
    has(page, "<code>ref-fast</code>");
    has(page, "<code>build/demo/kivi-standard.vec</code>");
    has(page, "<td>" KVQ_VERSION_STRING "</td>");
    has(page, "<code>kivi-quant</code>, <code>cert-step</code>");
    /* counts: cases, pass, fail, skip */
    has(page, "<tr><td><code>kivi</code></td><td class=\"n\">7</td><td class=\"n\">5</td>"
              "<td class=\"n fail\">2</td><td class=\"n zero\">0</td></tr>");
    has(page, "<tr><td><code>cert</code></td><td class=\"n\">2</td><td class=\"n\">1</td>"
              "<td class=\"n zero\">0</td><td class=\"n skip\">1</td></tr>");
    has(page, "<tr><td><code>kivi-quant</code></td><td class=\"n\">7</td>");
    has(page, "<tr><td><code>cert-step</code></td><td class=\"n\">2</td>");
    has(page, "<tr><td><code>exact</code></td><td class=\"n\">3</td><td class=\"n\">2</td>"
              "<td class=\"n fail\">1</td><td class=\"n zero\">0</td></tr>");
    has(page, "<tr><td><code>bounded</code></td><td class=\"n\">6</td><td class=\"n\">4</td>"
              "<td class=\"n fail\">1</td><td class=\"n skip\">1</td></tr>");
    /* requirements: cited by the detail or a margin, each case once, sorted */
    has(page, "<tr><td><code>[KIVI-B-03]</code></td><td class=\"n\">4</td><td class=\"n\">3</td>"
              "<td class=\"n fail\">1</td><td class=\"n zero\">0</td></tr>");
    has(page, "<tr><td><code>[API-ERR-01]</code></td><td class=\"n\">1</td><td class=\"n zero\">0</td>"
              "<td class=\"n fail\">1</td><td class=\"n zero\">0</td></tr>");
    has(page, "<tr><td><code>[CERT-CON-02]</code></td><td class=\"n\">1</td><td class=\"n\">1</td>");
    ck_assert(strstr(page, "[API-ERR-01]</code></td>") < strstr(page, "[CERT-CON-02]</code></td>"));
    ck_assert(strstr(page, "[CERT-CON-02]</code></td>") < strstr(page, "[KIVI-B-03]</code></td>"));
    /* failures: id, operation, level, line, detail */
    has(page, "<td><code>k-e-fail</code></td><td><code>kivi</code> / <code>kivi-quant</code></td>"
              "<td>exact</td><td class=\"n\">5</td>");
    has(page, "<td><code>k-b-fail</code></td><td><code>kivi</code> / <code>kivi-quant</code></td>"
              "<td>bounded</td><td class=\"n\">9</td>");
    has(page, "codes: expected 0x3f800000 (0x1p+0), got 0x3f800001 (0x1.000002p+0) [API-ERR-01]</td>");
    lacks(page, "<td><code>k-b-1</code>");
    /* skips, with their reason */
    has(page, "<td class=\"n\">1</td><td class=\"detail mono\">subject-has-no-cert_step</td>");
    /* one plot per quantity, in order of appearance */
    ck_assert_uint_eq(count(page, "<svg"), 2);
    ck_assert_uint_eq(count(page, "</svg>"), 2);
    has(page, "<figure id=\"margin-1\">\n<h3><code>deq error [KIVI-B-03]</code>");
    has(page, "<figure id=\"margin-2\">\n<h3><code>output error [CERT-CON-02]</code>");
    /* deq: 4 cases, 1 over, closest k-b-fail (1e-6 / 2e-6), one error 0 */
    has(page, "<b>4 cases</b>");
    has(page, "<b class=\"FAIL\">1 exceeds the bound</b>");
    has(page, "Smallest margin bound/error: 0.5 (case <code>k-b-fail</code>: error 2e-06, bound 1e-06)");
    has(page, "1 with error 0 (bottom band)");
    has(page, "<text x=\"534\" y=\"44\">within (3)</text>");
    has(page, "<text x=\"534\" y=\"64\">exceeds (1)</text>");
    has(page, "l-8 8\"><title>k-b-fail: error 2e-06, bound 1e-06 (fail)</title></path>");
    has(page, "r=\"3.5\"><title>k-b-2: error 0, bound 1e-06 (pass)</title></circle>");
    /* output error: 1 case within */
    has(page, "<b>1 case</b>");
    has(page, "<b class=\"PASS\">0 exceed the bound</b>");
    has(page, "(case <code>c-1</code>: error 0.0003, bound 0.02)");
    /* the diagonal and the bands */
    ck_assert_uint_eq(count(page, ">error = bound</text>"), 4);
    ck_assert_uint_eq(count(page, ">error 0</text>"), 2);
    ck_assert_uint_eq(count(page, ">bound 0</text>"), 2);
    free(page);
    fake_free(&f);
}
END_TEST

START_TEST(escaping_and_utf8)
{
    /* SPEC: [VER-REP-04] [VER-REP-03] -- every text escaped for HTML, valid UTF-8 kept, a stray byte
     * written as U+FFFD, control characters blanked. */
    static const char odd_q[] = "odd <q> & \xff [VER-REP-04]";
    fake f;
    size_t len;
    char *page;
    kvq_verdict *v;
    fake_init(&f, 4, "sub<j>&\"'\xff\xc3\xa9", "kivi-quant,<b>");
    snprintf(f.rep.skip_reason, sizeof f.rep.skip_reason, "no <device> \x01 here");
    v = fake_add(&f, "kivi-quant", "k-x", KVQ_LEVEL_BOUNDED, 12, KVQ_FAIL,
                 "<script>alert('x')</script> expected 0x3f800000 & got \xc3\xa9 \xff\xfe\xc0\xaf end\x7f.");
    kvq_verdict_margin(v, odd_q, 1.0, 0.5);
    page = render(&f.rep, &len);
    check_page(page, len);
    lacks(page, "<script>");
    lacks(page, "<device>");
    lacks(page, "<j>");
    lacks(page, "<q>");
    has(page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; expected 0x3f800000 &amp; got \xc3\xa9 "
              "&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD; end .</td>");
    has(page, "<code>sub&lt;j&gt;&amp;&quot;&#39;&#xFFFD;\xc3\xa9</code>");
    has(page, "<title>kvq verify: sub&lt;j&gt;&amp;&quot;&#39;&#xFFFD;\xc3\xa9 &#8212; FAIL</title>");
    has(page, "<code>kivi-quant</code>, <code>&lt;b&gt;</code>");
    has(page, "<td>no &lt;device&gt;   here</td>");
    has(page, "<code>odd &lt;q&gt; &amp; &#xFFFD; [VER-REP-04]</code>: observed error vs proven bound</h3>");
    has(page, "<tr><td><code>[VER-REP-04]</code></td><td class=\"n\">1</td>");
    ck_assert_uint_eq(count(page, "<svg"), 1);
    free(page);
    fake_free(&f);
}
END_TEST

START_TEST(what_was_judged)
{
    /* SPEC: [VER-REP-05] [VER-REP-03] -- the table of what was judged: one row per item, in the
     * JSON report's order, each item's text escaped. */
    fake f;
    size_t len;
    char *page, want[256];
    const char *at;
    fake_init(&f, 2, "s", "kivi-quant");
    snprintf(f.rep.prov.device, sizeof f.rep.prov.device, "GPU <b>&\x01\xff");
    snprintf(f.rep.prov.vectors_sha256, sizeof f.rep.prov.vectors_sha256, "%064d", 7);
    snprintf(f.rep.prov.vector_cases, sizeof f.rep.prov.vector_cases, "123");
    fake_add(&f, "kivi-quant", "k-1", KVQ_LEVEL_EXACT, 6, KVQ_PASS, NULL);
    page = render(&f.rep, &len);
    check_page(page, len);
    at = strstr(page, "<table class=\"meta\" id=\"provenance\">");
    ck_assert_ptr_nonnull(at);
    for (size_t i = 0; i < kvq_report_nitems; i++) { /* every item, in order */
        const char *row;
        snprintf(want, sizeof want, "<tr><th>%s</th><td><code>", kvq_report_items[i].label);
        row = strstr(at, want);
        ck_assert_msg(row != NULL, "no row '%s' after the previous one", kvq_report_items[i].label);
        at = row + 1;
    }
    ck_assert_uint_eq(count(strstr(page, "id=\"provenance\""), "<tr><th>") -
                          count(strstr(page, "id=\"counts-by\""), "<tr><th>"),
                      kvq_report_nitems);
    has(page, "<tr><th>device</th><td><code>GPU &lt;b&gt;&amp; &#xFFFD;</code></td></tr>");
    snprintf(want, sizeof want, "<tr><th>vectors SHA-256</th><td><code>%064d</code></td></tr>", 7);
    has(page, want);
    has(page, "<tr><th>cases in the vectors</th><td><code>123</code></td></tr>");
    lacks(page, "<b>&");
    free(page);
    fake_free(&f);
}
END_TEST

START_TEST(same_report_same_bytes)
{
    /* SPEC: [VER-REP-04] -- deterministic: two writes of one report are the same bytes. */
    fake f;
    size_t len1, len2;
    char *a, *b;
    small_report(&f);
    a = render(&f.rep, &len1);
    b = render(&f.rep, &len2);
    ck_assert_uint_eq(len1, len2);
    ck_assert(memcmp(a, b, len1) == 0);
    free(a), free(b);
    fake_free(&f);
}
END_TEST

START_TEST(missing_directory)
{
    /* SPEC: [VER-REP-04] [VER-OUT-02] [VER-RUN-04] -- a missing directory is KVQ_E_IO naming the
     * path; nothing is left behind. */
    fake f;
    char path[160], missing[128], err[512];
    struct stat sb;
    small_report(&f);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    snprintf(path, sizeof path, "%s/report.html", missing);
    err[0] = '\0';
    ck_assert_int_eq(kvq_report_html(path, &f.rep, err, sizeof err), KVQ_E_IO);
    ck_assert_msg(strstr(err, missing) != NULL, "err \"%s\" does not name the path", err);
    ck_assert_int_ne(stat(missing, &sb), 0);
    ck_assert_uint_eq(dir_entries(dir), 0);
    /* a directory is refused too, and stays what it was */
    ck_assert_int_eq(kvq_report_html(dir, &f.rep, err, sizeof err), KVQ_E_IO);
    ck_assert_msg(strstr(err, dir) != NULL, "err \"%s\" does not name the path", err);
    ck_assert_uint_eq(dir_entries(dir), 0);
    /* no err buffer is fine */
    ck_assert_int_eq(kvq_report_html(path, &f.rep, NULL, 0), KVQ_E_IO);
    fake_free(&f);
}
END_TEST

START_TEST(no_cases_no_margins)
{
    /* SPEC: [VER-REP-04] -- a report of no case, and one without margins: no plot, a whole page;
     * no case selected is not a pass [VER-EXIT-01]. */
    fake f;
    size_t len;
    char *page;
    fake_init(&f, 0, "ref-fast", "");
    free(f.rep.v);
    f.rep.v = NULL;
    page = render(&f.rep, &len);
    check_page(page, len);
    has(page, "<div class=\"verdict FAIL\" id=\"verdict\">FAIL</div>");
    has(page, "FAIL: no case was selected");
    has(page, "<td id=\"counts\">0 passed, 0 failed, 0 skipped ");
    has(page, "No case failed.");
    has(page, "No case reports a bounded quantity.");
    lacks(page, "<svg");
    has(page, "</body>\n</html>\n");
    free(page);
    fake_free(&f);

    fake_init(&f, 4, "ref-fast", "kivi-quant");
    fake_add(&f, "kivi-quant", "k-1", KVQ_LEVEL_EXACT, 3, KVQ_PASS, NULL);
    fake_add(&f, "kivi-quant", "k-2", KVQ_LEVEL_EXACT, 4, KVQ_PASS, NULL);
    page = render(&f.rep, &len);
    check_page(page, len);
    has(page, "<div class=\"verdict PASS\" id=\"verdict\">PASS</div>");
    has(page, "<td id=\"counts\">2 passed, 0 failed, 0 skipped ");
    lacks(page, "<svg");
    free(page);
    fake_free(&f);
}
END_TEST

START_TEST(verdict_rule)
{
    /* SPEC: [VER-REP-04] [VER-EXIT-01] -- PASS only when nothing failed or was skipped and a case
     * was judged; skipped without failures is SKIPPED; a failure is FAIL whatever else. */
    fake f;
    size_t len;
    char *page;
    fake_init(&f, 4, "gpu", "all");
    snprintf(f.rep.skip_reason, sizeof f.rep.skip_reason, "no CUDA device");
    fake_add(&f, "cert-step", "c-1", KVQ_LEVEL_BOUNDED, 3, KVQ_SKIP, "subject unavailable: no CUDA device");
    fake_add(&f, "cert-step", "c-2", KVQ_LEVEL_BOUNDED, 4, KVQ_PASS, NULL);
    page = render(&f.rep, &len);
    check_page(page, len);
    has(page, "<div class=\"verdict SKIPPED\" id=\"verdict\">SKIPPED</div>");
    has(page, "<tr><th>skip reason</th><td>no CUDA device</td></tr>");
    has(page, "<td class=\"n\">1</td><td class=\"detail mono\">subject unavailable: no CUDA device</td>");
    free(page);
    fake_add(&f, "cert-step", "c-3", KVQ_LEVEL_BOUNDED, 5, KVQ_FAIL, "contract: too far");
    page = render(&f.rep, &len);
    has(page, "<div class=\"verdict FAIL\" id=\"verdict\">FAIL</div>");
    free(page);
    fake_free(&f);
}
END_TEST

START_TEST(odd_margins)
{
    /* SPEC: [VER-REP-04] -- a bound of 0 on the side band (an error above it exceeds it), errors
     * of 0 on the bottom band, +inf at the edge, NaN counted and not drawn, cases on one pixel
     * one mark; the first 50 failures only. */
    fake f;
    size_t len;
    char *page, id[16];
    kvq_verdict *v;
    fake_init(&f, 64, "ref-fast", "kivi-quant");
    v = fake_add(&f, "kivi-quant", "z-both", KVQ_LEVEL_BOUNDED, 3, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 0.0, 0.0);
    v = fake_add(&f, "kivi-quant", "z-bound", KVQ_LEVEL_BOUNDED, 4, KVQ_FAIL, "over a bound of 0 [KIVI-B-03]");
    kvq_verdict_margin(v, Q_DEQ, 1e-9, 0.0);
    v = fake_add(&f, "kivi-quant", "inf-err", KVQ_LEVEL_BOUNDED, 5, KVQ_FAIL, "infinite [KIVI-B-03]");
    kvq_verdict_margin(v, Q_DEQ, HUGE_VAL, 1e-3);
    v = fake_add(&f, "kivi-quant", "nan-err", KVQ_LEVEL_BOUNDED, 6, KVQ_FAIL, "nan [KIVI-B-03]");
    kvq_verdict_margin(v, Q_DEQ, NAN, 1e-3);
    v = fake_add(&f, "kivi-quant", "dup-1", KVQ_LEVEL_BOUNDED, 7, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 1e-7, 1e-5);
    v = fake_add(&f, "kivi-quant", "dup-2", KVQ_LEVEL_BOUNDED, 8, KVQ_PASS, NULL);
    kvq_verdict_margin(v, Q_DEQ, 1e-7, 1e-5);
    for (int i = 0; i < 55; i++) {
        snprintf(id, sizeof id, "many-%02d", i);
        fake_add(&f, "kivi-quant", id, KVQ_LEVEL_EXACT, 10 + i, KVQ_FAIL, "flags: expected 0x0, got 0x1");
    }
    page = render(&f.rep, &len);
    check_page(page, len);
    has(page, "<b>6 cases</b>");
    has(page, "<b class=\"FAIL\">2 exceed the bound</b>");
    has(page, "1 with error 0 (bottom band). 2 with bound 0 (right band). 1 not plotted (NaN or negative). "
              "4 marks drawn: cases on the same pixel share one.");
    has(page, "<title>dup-1: error 1e-07, bound 1e-05 (pass)</title>");
    lacks(page, "<title>dup-2:");
    has(page, "Smallest margin bound/error: 0 (case <code>z-bound</code>: error 1e-09, bound 0)");
    has(page, "<title>inf-err: error +inf, bound 0.001 (fail)</title>");
    lacks(page, "<title>nan-err:");
    has(page, "The first 50 of 58 failures");
    has(page, "<td><code>many-46</code>");
    lacks(page, "<td><code>many-47</code>");
    free(page);
    fake_free(&f);
}
END_TEST

/* ---- a large report: the sample page -------------------------------------------------- */

static uint64_t rng;

static double draw(void) /* uniform in [0, 1) */
{
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng >> 11) * 0x1p-53;
}

START_TEST(many_cases)
{
    /* SPEC: [VER-REP-04] -- KVQ_RANDOM_CASES cases of both operations: every count as drawn,
     * a page whose size does not grow with points on the same pixel, the same bytes twice. */
    fake f;
    size_t len, len2, n = ncases < 3 ? 3 : ncases > 200000 ? 200000 : (size_t)ncases;
    size_t exceed[2] = { 0, 0 }, cases[2] = { 0, 0 }, failed = 0;
    char *page, *again, id[32], detail[256], want[160];
    const char *sample = getenv("KVQ_HTML_SAMPLE");
    rng = seed;
    fake_init(&f, n, "ref-fast", "kivi-quant,cert-step");
    for (size_t i = 0; i < n; i++) {
        double u = draw();
        kvq_verdict *v;
        if (i % 10 == 9) { /* a tenth: cert-step, one in eight of them unimplemented */
            double bound = pow(10.0, -6.0 + 4.0 * draw()), err = bound * pow(10.0, -6.0 + 5.8 * draw());
            snprintf(id, sizeof id, "cert-%05zu", i);
            if (draw() < 0.125) {
                fake_add(&f, "cert-step", id, KVQ_LEVEL_BOUNDED, (long)i + 2, KVQ_SKIP, "subject-has-no-cert_step");
                continue;
            }
            if (draw() < 0.05) err = bound * 1.5;
            if (err > bound)
                snprintf(detail, sizeof detail, "contract: |O - O_exact| <= %a exceeds the claimed %a [CERT-CON-02]",
                         err, bound);
            v = fake_add(&f, "cert-step", id, KVQ_LEVEL_BOUNDED, (long)i + 2, err > bound ? KVQ_FAIL : KVQ_PASS,
                         err > bound ? detail : NULL);
            kvq_verdict_margin(v, Q_OUT, err, bound);
            cases[1]++, exceed[1] += err > bound, failed += err > bound;
        } else if (u < 0.4) { /* exact kivi, 1 in 40 failing */
            int bad = draw() < 0.025;
            snprintf(id, sizeof id, "kivi-%05zu", i);
            snprintf(detail, sizeof detail, "codes: %zu of 64 bytes differ, first byte %zu: expected 0x3a, got "
                     "0x3b [KIVI-Q-04]", i % 7 + 1, i % 64);
            fake_add(&f, "kivi-quant", id, KVQ_LEVEL_EXACT, (long)i + 2, bad ? KVQ_FAIL : KVQ_PASS,
                     bad ? detail : NULL);
            failed += bad;
        } else { /* bounded kivi: error within 5 decades of its bound, some 0, 3% over */
            double bound = pow(10.0, -8.0 + 5.0 * draw()), err = bound * pow(10.0, -5.0 + 5.0 * draw());
            int over = draw() < 0.03;
            if (draw() < 0.05) err = 0.0;
            if (over) err = bound * (1.0 + 3.0 * draw());
            snprintf(id, sizeof id, "kivi-%05zu", i);
            snprintf(detail, sizeof detail, "deq of element %zu: 0x3f800001 (0x1.000002p+0) is %.3e from "
                     "code*scale+zero (code 0x5), bound %.3e [KIVI-B-03]; 1 of 64 elements fail", i % 64, err, bound);
            v = fake_add(&f, "kivi-quant", id, KVQ_LEVEL_BOUNDED, (long)i + 2, over ? KVQ_FAIL : KVQ_PASS,
                         over ? detail : NULL);
            kvq_verdict_margin(v, Q_DEQ, err, bound);
            cases[0]++, exceed[0] += over, failed += over;
        }
    }
    ck_assert_uint_eq(f.rep.failed, failed);
    page = render(&f.rep, &len);
    check_page(page, len);
    again = render(&f.rep, &len2);
    ck_assert(len == len2 && memcmp(page, again, len) == 0);
    free(again);
    snprintf(want, sizeof want, "<td id=\"counts\">%zu passed, %zu failed, %zu skipped ", f.rep.passed, f.rep.failed,
             f.rep.skipped);
    has(page, want);
    ck_assert_uint_eq(count(page, "<svg"), (cases[0] > 0) + (cases[1] > 0));
    for (int q = 0; q < 2; q++) {
        if (cases[q] == 0) continue;
        snprintf(want, sizeof want, "<b>%zu case%s</b>", cases[q], cases[q] == 1 ? "" : "s");
        has(page, want);
        snprintf(want, sizeof want, "%zu exceed%s the bound</b>", exceed[q], exceed[q] == 1 ? "s" : "");
        has(page, want);
    }
    /* a red cross per failing point at most, one list entry per failure up to 50 */
    ck_assert_uint_le(count(page, "l-8 8\"><title>"), exceed[0] + exceed[1]);
    ck_assert_uint_ge(count(page, "l-8 8\"><title>"), (exceed[0] > 0) + (exceed[1] > 0));
    ck_assert_uint_le(count(page, "r=\"3.5\"><title>"), cases[0] + cases[1] - exceed[0] - exceed[1]);
    ck_assert_uint_eq(count(page, "<tr><td class=\"n\">"), (failed < 50 ? failed : 50) + (f.rep.skipped > 0));
    if (sample != NULL && sample[0] != '\0') {
        char err[512];
        ck_assert_msg(kvq_report_html(sample, &f.rep, err, sizeof err) == KVQ_OK, "%s", err);
        printf("check_html: sample page of %zu cases in %s\n", n, sample);
    }
    free(page);
    fake_free(&f);
}
END_TEST

static Suite *html_suite(void)
{
    Suite *s = suite_create("html");
    TCase *t = tcase_create("page");
    tcase_add_checked_fixture(t, setup_dir, teardown_dir);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, counts_failures_and_plots);
    tcase_add_test(t, escaping_and_utf8);
    tcase_add_test(t, what_was_judged);
    tcase_add_test(t, same_report_same_bytes);
    tcase_add_test(t, missing_directory);
    tcase_add_test(t, no_cases_no_margins);
    tcase_add_test(t, verdict_rule);
    tcase_add_test(t, odd_margins);
    tcase_add_test(t, many_cases);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return kvq_check_main("check_html", html_suite(), &seed, &ncases);
}
