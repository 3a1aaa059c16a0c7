/*
 * html.c -- the HTML report of a verification [VER-REP-04].
 *
 * One self-contained HTML5 page: an inline <style>, inline SVG, no script and
 * nothing fetched from anywhere.  It shows the header of the run (subject,
 * vectors, kvq version, claim, skip reason, overall verdict), what was judged
 * (the items of [VER-REP-05]: digests, levels, subject, device), the counts per
 * family, operation, level and requirement ID, the first failures with their
 * full detail, and for every bounded quantity a scatter plot of each case's
 * observed error against its proven bound.
 *
 * Every text that comes from the report is escaped for HTML and kept valid
 * UTF-8 (a byte that starts no valid sequence becomes U+FFFD) [VER-REP-03].
 * The output is a function of the report alone: no time, no address, numbers
 * printed with fixed formats, so the same report gives the same bytes.  The
 * file is written through kvq_outfile (whole or not at all) [VER-RUN-04].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define HTML_MAX_FAILURES 50  /* failures listed with their detail */
#define HTML_MAX_SKIPS 20     /* distinct skip reasons listed */
#define HTML_REQ_MAX 48       /* longest requirement ID recognised, with its brackets */
#define HTML_CASE_REQS 16     /* distinct IDs counted per case */

/* ---- text ------------------------------------------------------------------ */

/* Text or an attribute value: valid UTF-8 copied, a stray byte as U+FFFD,
 * `& < > " '` as references, control characters (C0 but tab and newline, DEL,
 * C1) as blanks since HTML does not allow them. */
static void esc(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str != NULL ? str : "");
    while (*s) {
        unsigned char ch = *s;
        size_t k = kvq_utf8_seq(s);
        if (k == 0) {
            fputs("&#xFFFD;", f);
            s++;
            continue;
        }
        if (k > 1) {
            if (k == 2 && ch == 0xC2 && s[1] < 0xA0) fputc(' ', f); /* C1 control */
            else fwrite(s, 1, k, f);
            s += k;
            continue;
        }
        switch (ch) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        case '\t': case '\n': fputc(ch, f); break;
        default: fputc(ch < 0x20 || ch == 0x7F ? ' ' : ch, f); break;
        }
        s++;
    }
}

/* A number for people: six significant digits; non-finite values by name. */
static void num(FILE *f, double x)
{
    if (isnan(x)) fputs("NaN", f);
    else if (isinf(x)) fputs(x > 0 ? "+inf" : "-inf", f);
    else fprintf(f, "%.6g", x);
}

static const char *verdict_of(const kvq_verify_report *rep)
{
    /* the exit status's rule [VER-EXIT-01]: PASS only when every selected case
     * passed and there was one; a skip is never a pass */
    if (rep->failed > 0) return "FAIL";
    if (rep->skipped > 0) return "SKIPPED";
    if (rep->n == 0) return "FAIL";
    return "PASS";
}

static const char *case_id(const kvq_verdict *v)
{
    return v->vc != NULL ? v->vc->id : "?";
}

static const char *op_name(const kvq_verdict *v)
{
    return v->vc != NULL && v->vc->op != NULL && v->vc->op->name != NULL ? v->vc->op->name : "?";
}

static const char *family_name(const kvq_verdict *v)
{
    return v->vc != NULL && v->vc->op != NULL && v->vc->op->family != NULL &&
                   v->vc->op->family->name != NULL
               ? v->vc->op->family->name
               : "?";
}

static const char *level_name(const kvq_verdict *v)
{
    return v->vc != NULL ? kvq_level_name(v->vc->level) : "?";
}

static int outcome_index(int o)
{
    return o == KVQ_PASS ? 0 : o == KVQ_FAIL ? 1 : 2;
}

/* ---- counting ---------------------------------------------------------------- */

/* A row of a count table: a name and its cases by outcome (pass, fail, skip). */
typedef struct tally {
    char *name;
    size_t n[3];
} tally;

typedef struct tallies {
    tally *t;
    size_t n, cap;
} tallies;

/* The row of name (added at the end when new); NULL when out of memory. */
static tally *tally_get(tallies *ts, const char *name, size_t len)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strlen(ts->t[i].name) == len && memcmp(ts->t[i].name, name, len) == 0) return &ts->t[i];
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 16;
        tally *t = realloc(ts->t, cap * sizeof *t);
        if (t == NULL) return NULL;
        ts->t = t, ts->cap = cap;
    }
    {
        tally *r = &ts->t[ts->n];
        r->name = malloc(len + 1);
        if (r->name == NULL) return NULL;
        memcpy(r->name, name, len);
        r->name[len] = '\0';
        memset(r->n, 0, sizeof r->n);
        ts->n++;
        return r;
    }
}

static int tally_add(tallies *ts, const char *name, int outcome)
{
    tally *r = tally_get(ts, name, strlen(name));
    if (r == NULL) return 0;
    r->n[outcome_index(outcome)]++;
    return 1;
}

static void tallies_free(tallies *ts)
{
    for (size_t i = 0; i < ts->n; i++) free(ts->t[i].name);
    free(ts->t);
    memset(ts, 0, sizeof *ts);
}

static int tally_cmp(const void *a, const void *b)
{
    return strcmp(((const tally *)a)->name, ((const tally *)b)->name);
}

/* The next requirement ID cited in s from *pos: "[KIVI-B-03]", "[VER-CERT-02..05]"
 * -- an upper-case letter, then upper-case letters, digits, '-' and '.', with at
 * least one '-', in brackets.  Sets *start and *len (brackets included); 0 when
 * there is none. */
static int next_req(const char *s, size_t *pos, size_t *start, size_t *len)
{
    for (size_t i = *pos; s[i]; i++) {
        size_t j = i + 1;
        int dash = 0;
        if (s[i] != '[' || !(s[j] >= 'A' && s[j] <= 'Z')) continue;
        while ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9') || s[j] == '-' || s[j] == '.') {
            dash |= s[j] == '-';
            j++;
        }
        if (s[j] != ']' || !dash || s[j - 1] == '-' || j + 1 - i > HTML_REQ_MAX) continue;
        *start = i, *len = j + 1 - i, *pos = j + 1;
        return 1;
    }
    return 0;
}

/* The IDs a case cites (detail and margin quantities), each counted once. */
static int count_reqs(tallies *reqs, const kvq_verdict *v)
{
    const char *seen[HTML_CASE_REQS];
    size_t seenlen[HTML_CASE_REQS], nseen = 0;
    for (int m = -1; m < v->nmargin && m < KVQ_VERDICT_MARGINS; m++) {
        const char *s = m < 0 ? v->detail : v->margin[m].quantity;
        size_t pos = 0, a, l;
        if (s == NULL) continue;
        while (next_req(s, &pos, &a, &l)) {
            size_t k;
            tally *r;
            for (k = 0; k < nseen; k++)
                if (seenlen[k] == l && memcmp(seen[k], s + a, l) == 0) break;
            if (k < nseen || nseen == HTML_CASE_REQS) continue;
            seen[nseen] = s + a, seenlen[nseen++] = l;
            r = tally_get(reqs, s + a, l);
            if (r == NULL) return 0;
            r->n[outcome_index(v->outcome)]++;
        }
    }
    return 1;
}

/* ---- page parts ---------------------------------------------------------------- */

static const char STYLE[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
    "margin:1.5em auto;max-width:72em;padding:0 1em;color:#1b1f24;line-height:1.4}\n"
    "h1{font-size:1.5em;margin:0 0 .4em}h2{font-size:1.2em;margin:1.6em 0 .5em;"
    "border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{font-size:1em;margin:1em 0 .3em}\n"
    "table{border-collapse:collapse;margin:.3em 0 1em}th,td{border:1px solid #d0d7de;"
    "padding:.2em .6em;text-align:left;vertical-align:top}\n"
    "thead th{background:#f3f5f7}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "table.meta th{background:#f3f5f7;font-weight:600;width:11em}\n"
    "code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.9em}\n"
    "td.detail{white-space:pre-wrap;word-break:break-all;max-width:44em}"
    "table.failures code{white-space:nowrap}\n"
    ".verdict{display:inline-block;font-weight:700;font-size:1.3em;padding:.15em .7em;"
    "border-radius:.3em;margin:.2em 0 .6em}\n"
    ".PASS{background:#dafbe1;color:#116329}.FAIL{background:#ffebe9;color:#a40e26}"
    ".SKIPPED{background:#fff8c5;color:#7d4e00}\n"
    "td.fail{color:#a40e26;font-weight:600}td.skip{color:#7d4e00}td.zero{color:#8c959f}\n"
    ".counts{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start}\n"
    "figure{margin:1em 0 2em}figcaption{max-width:46em;font-size:.95em}\n"
    "svg{background:#fff;border:1px solid #d0d7de}\n"
    "svg text{font-family:system-ui,Helvetica,Arial,sans-serif;font-size:12px;fill:#1b1f24}\n"
    "svg .tick{font-size:11px}svg .small{font-size:10px;fill:#57606a}\n"
    ".note{color:#57606a}\n";

/* A count cell: grey when 0, else in the outcome's colour (cls, or none). */
static void td_count(FILE *f, size_t n, const char *cls)
{
    if (n == 0) fputs("<td class=\"n zero\">0</td>", f);
    else if (cls != NULL) fprintf(f, "<td class=\"n %s\">%zu</td>", cls, n);
    else fprintf(f, "<td class=\"n\">%zu</td>", n);
}

static void count_table(FILE *f, const char *title, const char *what, const tallies *ts)
{
    fprintf(f, "<div><h3>%s</h3>\n<table>\n<thead><tr><th>%s</th><th class=\"n\">cases</th>"
               "<th class=\"n\">pass</th><th class=\"n\">fail</th><th class=\"n\">skip</th></tr></thead>\n<tbody>\n",
            title, what);
    if (ts->n == 0) fputs("<tr><td colspan=\"5\" class=\"note\">none</td></tr>\n", f);
    for (size_t i = 0; i < ts->n; i++) {
        const tally *t = &ts->t[i];
        fputs("<tr><td><code>", f);
        esc(f, t->name);
        fputs("</code></td>", f);
        td_count(f, t->n[0] + t->n[1] + t->n[2], NULL);
        td_count(f, t->n[0], NULL);
        td_count(f, t->n[1], "fail");
        td_count(f, t->n[2], "skip");
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table></div>\n", f);
}

static void header(FILE *f, const kvq_verify_report *rep, const char *verdict)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"kvq " KVQ_VERSION_STRING "\">\n<title>kvq verify: ",
          f);
    esc(f, rep->subject);
    fprintf(f, " &#8212; %s</title>\n<style>\n%s</style>\n</head>\n<body>\n", verdict, STYLE);
    fputs("<h1>kvq verification report</h1>\n", f);
    fprintf(f, "<div class=\"verdict %s\" id=\"verdict\">%s</div>\n", verdict, verdict);
    fputs("<table class=\"meta\">\n<tr><th>subject</th><td><code>", f);
    esc(f, rep->subject);
    fputs("</code></td></tr>\n<tr><th>vectors</th><td><code>", f);
    esc(f, rep->vectors);
    fputs("</code></td></tr>\n", f);
    if (rep->results[0]) {
        fputs("<tr><th>results</th><td><code>", f);
        esc(f, rep->results);
        fputs("</code></td></tr>\n", f);
    }
    fputs("<tr><th>kvq version</th><td>" KVQ_VERSION_STRING "</td></tr>\n"
          "<tr><th>claimed operations</th><td>",
          f);
    if (rep->claimed[0] == '\0') fputs("<span class=\"note\">none</span>", f);
    for (const char *p = rep->claimed; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char name[sizeof rep->claimed];
        memcpy(name, p, n);
        name[n] = '\0';
        fputs(p == rep->claimed ? "<code>" : ", <code>", f);
        esc(f, name);
        fputs("</code>", f);
        p += n + (comma != NULL);
    }
    fputs("</td></tr>\n", f);
    if (rep->skip_reason[0]) {
        fputs("<tr><th>skip reason</th><td>", f);
        esc(f, rep->skip_reason);
        fputs("</td></tr>\n", f);
    }
    fprintf(f, "<tr><th>cases</th><td id=\"counts\">%zu passed, %zu failed, %zu skipped "
               "<span class=\"note\">(%zu judged; %zu deselected by level, %zu of operations not "
               "claimed)</span></td></tr>\n",
            rep->passed, rep->failed, rep->skipped, rep->n, rep->deselected, rep->unclaimed);
    fputs("<tr><th>verdict</th><td>", f);
    if (rep->failed > 0) fprintf(f, "FAIL: %zu case%s failed", rep->failed, rep->failed == 1 ? "" : "s");
    else if (rep->skipped > 0)
        fprintf(f, "SKIPPED: %zu case%s skipped, and a skip is never a pass", rep->skipped,
                rep->skipped == 1 ? "" : "s");
    else if (rep->n == 0) fputs("FAIL: no case was selected", f);
    else fputs("PASS: every selected case passed", f);
    fputs(" <span class=\"note\">(the rule of the exit status, [VER-EXIT-01])</span></td></tr>\n"
          "</table>\n",
          f);
    /* what was judged [VER-REP-05]: the same items as the JSON report's */
    fputs("<h2 id=\"judged\">What was judged</h2>\n<table class=\"meta\" id=\"provenance\">\n", f);
    for (size_t i = 0; i < kvq_report_nitems; i++) {
        const kvq_report_item *it = &kvq_report_items[i];
        fprintf(f, "<tr><th>%s</th><td><code>", it->label);
        esc(f, kvq_report_item_text(rep, it));
        fputs("</code></td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void failures(FILE *f, const kvq_verify_report *rep)
{
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < rep->n; i++) total += rep->v[i].outcome == KVQ_FAIL;
    fputs("<h2 id=\"failures\">Failures</h2>\n", f);
    if (total == 0) {
        fputs("<p class=\"note\">No case failed.</p>\n", f);
        return;
    }
    if (total > HTML_MAX_FAILURES)
        fprintf(f, "<p>The first %d of %zu failures (the JSON report lists them all).</p>\n",
                HTML_MAX_FAILURES, total);
    fputs("<table class=\"failures\">\n<thead><tr><th class=\"n\">#</th><th>case</th><th>operation</th>"
          "<th>level</th><th class=\"n\">vector line</th><th>detail (expected and provided values)</th>"
          "</tr></thead>\n<tbody>\n",
          f);
    for (size_t i = 0; i < rep->n && shown < HTML_MAX_FAILURES; i++) {
        const kvq_verdict *v = &rep->v[i];
        if (v->outcome != KVQ_FAIL) continue;
        fprintf(f, "<tr><td class=\"n\">%zu</td><td><code>", ++shown);
        esc(f, case_id(v));
        fputs("</code></td><td><code>", f);
        esc(f, family_name(v));
        fputs("</code> / <code>", f);
        esc(f, op_name(v));
        fputs("</code>", f);
        if (v->vc != NULL && v->vc->in != NULL && v->vc->op != NULL && v->vc->op->describe != NULL) {
            char what[160];
            what[0] = '\0';
            v->vc->op->describe(v->vc, what, sizeof what);
            fputs("<br><span class=\"mono note\">", f);
            esc(f, what);
            fputs("</span>", f);
        }
        fputs("</td><td>", f);
        esc(f, level_name(v));
        fprintf(f, "</td><td class=\"n\">%ld</td><td class=\"detail mono\">", v->vc != NULL ? v->vc->line : 0L);
        esc(f, v->detail);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
}

/* Distinct skip reasons with their counts (a skip is never a pass, so say why). */
static int skips(FILE *f, const kvq_verify_report *rep)
{
    tallies why = { 0 };
    if (rep->skipped == 0) return 1;
    for (size_t i = 0; i < rep->n; i++)
        if (rep->v[i].outcome == KVQ_SKIP && !tally_add(&why, rep->v[i].detail, KVQ_SKIP)) {
            tallies_free(&why);
            return 0;
        }
    fputs("<h2 id=\"skips\">Skipped cases</h2>\n<table>\n<thead><tr><th class=\"n\">cases</th>"
          "<th>reason</th></tr></thead>\n<tbody>\n",
          f);
    for (size_t i = 0; i < why.n && i < HTML_MAX_SKIPS; i++) {
        fprintf(f, "<tr><td class=\"n\">%zu</td><td class=\"detail mono\">", why.t[i].n[2]);
        esc(f, why.t[i].name);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
    if (why.n > HTML_MAX_SKIPS)
        fprintf(f, "<p class=\"note\">%zu further reasons not shown.</p>\n", why.n - HTML_MAX_SKIPS);
    tallies_free(&why);
    return 1;
}

/* ---- margin plots ---------------------------------------------------------------- */

/* The plot's geometry (SVG user units): a square log-log area, a band below it
 * for an error of 0 and a band right of it for a bound of 0, a legend right. */
#define SVG_W 660
#define SVG_H 520
#define PX0 90.0
#define PX1 470.0
#define PY0 24.0
#define PY1 404.0
#define BAND_Y0 414.0
#define BAND_Y1 438.0
#define BAND_X0 480.0
#define BAND_X1 504.0

typedef struct plot {
    double lo, hi, step;  /* log10 range of both axes, tick step (decades) */
} plot;

static double px(const plot *p, double l)
{
    return PX0 + (l - p->lo) / (p->hi - p->lo) * (PX1 - PX0);
}

static double py(const plot *p, double l)
{
    return PY1 - (l - p->lo) / (p->hi - p->lo) * (PY1 - PY0);
}

/* log10 of a positive value, +inf at the top of the range. */
static double lg(const plot *p, double x)
{
    return isinf(x) ? p->hi : log10(x);
}

static int plottable(double x)
{
    return !isnan(x) && x >= 0.0;
}

/* The margin of quantity q of a verdict, or NULL. */
static const kvq_margin *margin_of(const kvq_verdict *v, const char *q)
{
    for (int m = 0; m < v->nmargin && m < KVQ_VERDICT_MARGINS; m++)
        if (v->margin[m].quantity != NULL && strcmp(v->margin[m].quantity, q) == 0) return &v->margin[m];
    return NULL;
}

/* "10<sup>-6</sup>" as SVG text at x, y. */
static void decade(FILE *f, double x, double y, const char *anchor, double l)
{
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">10<tspan dy=\"-5\" "
               "font-size=\"9\">%.0f</tspan></text>\n",
            x, y, anchor, l + 0.0); /* + 0.0: never "-0" */
}

static int margin_plot(FILE *f, const kvq_verify_report *rep, const char *q, size_t index)
{
    plot p;
    double mn = HUGE_VAL, mx = -HUGE_VAL;
    size_t cases = 0, exceed = 0, within = 0, zero_err = 0, zero_bound = 0, unplotted = 0, drawn = 0;
    const kvq_verdict *closest = NULL;
    double closest_ratio = HUGE_VAL;
    unsigned char *used;

    /* range: every positive finite value of either axis, in whole decades */
    for (size_t i = 0; i < rep->n; i++) {
        const kvq_margin *m = margin_of(&rep->v[i], q);
        if (m == NULL) continue;
        cases++;
        if (!plottable(m->error) || !plottable(m->bound)) {
            unplotted++;
            continue;
        }
        for (int k = 0; k < 2; k++) {
            double x = k ? m->error : m->bound;
            if (x > 0.0 && isfinite(x)) {
                double l = log10(x);
                mn = l < mn ? l : mn;
                mx = l > mx ? l : mx;
            }
        }
        if (m->error > m->bound) exceed++;
        else within++;
        zero_err += m->error == 0.0;
        zero_bound += m->bound == 0.0;
        if (m->error > 0.0) {
            double r = m->bound / m->error;
            if (r < closest_ratio || closest == NULL) closest_ratio = r, closest = &rep->v[i];
        }
    }
    if (mn > mx) mn = -1.0, mx = 0.0;
    p.lo = floor(mn), p.hi = ceil(mx);
    if (p.hi <= p.lo) p.hi = p.lo + 1.0;
    p.step = ceil((p.hi - p.lo) / 8.0);
    p.lo = floor(p.lo / p.step) * p.step;
    p.hi = ceil(p.hi / p.step) * p.step;
    if (p.hi <= p.lo) p.hi = p.lo + p.step;

    used = calloc((size_t)SVG_W * SVG_H, 1);
    if (used == NULL) return 0;

    fprintf(f, "<figure id=\"margin-%zu\">\n<h3><code>", index);
    esc(f, q);
    fprintf(f, "</code>: observed error vs proven bound</h3>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "role=\"img\">\n<title>",
            SVG_W, SVG_H, SVG_W, SVG_H);
    esc(f, q);
    fputs(": observed error vs proven bound, one point per case</title>\n", f);
    /* the region where the error exceeds its bound, the bands, the frame */
    fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"#fff1f0\"/>\n", PX0, PY1, PX1, PY0,
            PX0, PY0);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f5f7\" stroke=\"#afb8c1\"/>\n",
            PX0, BAND_Y0, PX1 - PX0, BAND_Y1 - BAND_Y0);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f5f7\" stroke=\"#afb8c1\"/>\n",
            BAND_X0, PY0, BAND_X1 - BAND_X0, PY1 - PY0);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f5f7\" stroke=\"#afb8c1\"/>\n",
            BAND_X0, BAND_Y0, BAND_X1 - BAND_X0, BAND_Y1 - BAND_Y0);
    fprintf(f, "<text class=\"small\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">error 0</text>\n", PX0 - 6,
            (BAND_Y0 + BAND_Y1) / 2 + 4);
    fprintf(f, "<text class=\"small\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">bound 0</text>\n",
            (BAND_X0 + BAND_X1) / 2, PY0 - 8);
    /* decade grid and tick labels */
    for (double l = p.lo; l <= p.hi + 1e-9; l += p.step) {
        double x = px(&p, l), y = py(&p, l);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/>\n", x, PY0, x,
                BAND_Y1);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/>\n", PX0, y,
                BAND_X1, y);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>\n", x, BAND_Y1,
                x, BAND_Y1 + 5);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>\n", PX0 - 5, y,
                PX0, y);
        decade(f, x, BAND_Y1 + 20, "middle", l);
        decade(f, PX0 - 8, y + 4, "end", l);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#57606a\"/>\n",
            PX0, PY0, PX1 - PX0, PY1 - PY0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cf222e\" "
               "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
            PX0, PY1, PX1, PY0);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#cf222e\" transform=\"rotate(-45 %.1f %.1f)\" "
               "text-anchor=\"end\" style=\"fill:#cf222e\">error = bound</text>\n",
            PX1 - 22, PY0 + 14, PX1 - 22, PY0 + 14); /* just above the line */
    fprintf(f, "<text class=\"small\" x=\"%.1f\" y=\"%.1f\">exceeds the bound</text>\n", PX0 + 8, PY0 + 16);
    fprintf(f, "<text class=\"small\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">within the bound</text>\n",
            PX1 - 8, PY1 - 8);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">proven bound (log scale)</text>\n",
            (PX0 + PX1) / 2, (double)SVG_H - 14);
    fprintf(f, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">"
               "observed error (log scale)</text>\n",
            (PY0 + PY1) / 2, (PY0 + PY1) / 2);
    /* the points: within as blue circles, then exceeding as red crosses on
     * top; one mark per pixel and kind (the caption counts every case) */
    for (int pass = 0; pass < 2; pass++) {
        fputs(pass ? "<g class=\"over\" fill=\"none\" stroke=\"#cf222e\" stroke-width=\"2.2\">\n"
                   : "<g class=\"within\" fill=\"#0969da\" fill-opacity=\"0.55\" stroke=\"#0550ae\" "
                     "stroke-width=\"0.8\">\n",
              f);
        for (size_t i = 0; i < rep->n; i++) {
            const kvq_verdict *v = &rep->v[i];
            const kvq_margin *m = margin_of(v, q);
            double x, y;
            int cx, cy;
            if (m == NULL || !plottable(m->error) || !plottable(m->bound)) continue;
            if ((m->error > m->bound) != pass) continue;
            x = m->bound == 0.0 ? (BAND_X0 + BAND_X1) / 2 : px(&p, lg(&p, m->bound));
            y = m->error == 0.0 ? (BAND_Y0 + BAND_Y1) / 2 : py(&p, lg(&p, m->error));
            cx = (int)lround(x), cy = (int)lround(y);
            if (cx < 0 || cy < 0 || cx >= SVG_W || cy >= SVG_H) continue;
            if (used[(size_t)cy * SVG_W + (size_t)cx] & (1u << pass)) continue;
            used[(size_t)cy * SVG_W + (size_t)cx] |= (unsigned char)(1u << pass);
            drawn++;
            if (pass) fprintf(f, "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\">", x - 4, y - 4);
            else fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\">", x, y);
            fputs("<title>", f);
            esc(f, case_id(v));
            fputs(": error ", f);
            num(f, m->error);
            fputs(", bound ", f);
            num(f, m->bound);
            fprintf(f, " (%s)</title>", kvq_outcome_name(v->outcome));
            fputs(pass ? "</path>\n" : "</circle>\n", f);
        }
        fputs("</g>\n", f);
    }
    free(used);
    /* legend */
    fprintf(f, "<circle cx=\"524\" cy=\"40\" r=\"3.5\" fill=\"#0969da\" fill-opacity=\"0.55\" stroke=\"#0550ae\"/>"
               "<text x=\"534\" y=\"44\">within (%zu)</text>\n",
            within);
    fprintf(f, "<path d=\"M520 56l8 8m0 -8l-8 8\" stroke=\"#cf222e\" stroke-width=\"2.2\"/>"
               "<text x=\"534\" y=\"64\">exceeds (%zu)</text>\n",
            exceed);
    fputs("<line x1=\"516\" y1=\"80\" x2=\"530\" y2=\"80\" stroke=\"#cf222e\" stroke-width=\"1.5\" "
          "stroke-dasharray=\"4 2\"/><text x=\"534\" y=\"84\">error = bound</text>\n",
          f);
    fputs("</svg>\n<figcaption>", f);
    fprintf(f, "<b>%zu case%s</b>, one point each (x: the proven bound, y: the largest observed error "
               "of the case; both axes log10, one tick per %.0f decade%s). ",
            cases, cases == 1 ? "" : "s", p.step, p.step == 1.0 ? "" : "s");
    fprintf(f, "<b class=\"%s\">%zu exceed%s the bound</b>. ", exceed ? "FAIL" : "PASS", exceed,
            exceed == 1 ? "s" : "");
    if (closest != NULL) {
        const kvq_margin *m = margin_of(closest, q);
        fputs("Smallest margin bound/error: ", f);
        num(f, closest_ratio);
        fputs(" (case <code>", f);
        esc(f, case_id(closest));
        fputs("</code>: error ", f);
        num(f, m->error);
        fputs(", bound ", f);
        num(f, m->bound);
        fputs("). ", f);
    } else if (cases > 0) {
        fputs("No case has a nonzero error. ", f);
    }
    if (zero_err) fprintf(f, "%zu with error 0 (bottom band). ", zero_err);
    if (zero_bound) fprintf(f, "%zu with bound 0 (right band). ", zero_bound);
    if (unplotted) fprintf(f, "%zu not plotted (NaN or negative). ", unplotted);
    if (drawn < cases - unplotted)
        fprintf(f, "%zu marks drawn: cases on the same pixel share one. ", drawn);
    fputs("</figcaption>\n</figure>\n", f);
    return 1;
}

/* ---- the page ------------------------------------------------------------------- */

static int write_page(FILE *f, const kvq_verify_report *rep)
{
    tallies fam = { 0 }, ops = { 0 }, lev = { 0 }, reqs = { 0 };
    const char **qs = NULL;
    size_t nq = 0, capq = 0;
    int ok = 1;
    const char *verdict = verdict_of(rep);

    for (size_t i = 0; i < rep->n && ok; i++) {
        const kvq_verdict *v = &rep->v[i];
        ok = tally_add(&fam, family_name(v), v->outcome) && tally_add(&ops, op_name(v), v->outcome) &&
             tally_add(&lev, level_name(v), v->outcome) && count_reqs(&reqs, v);
        for (int m = 0; ok && m < v->nmargin && m < KVQ_VERDICT_MARGINS; m++) {
            const char *q = v->margin[m].quantity;
            size_t k;
            if (q == NULL) continue;
            for (k = 0; k < nq; k++)
                if (strcmp(qs[k], q) == 0) break;
            if (k < nq) continue;
            if (nq == capq) {
                size_t cap = capq ? 2 * capq : 8;
                const char **t = realloc(qs, cap * sizeof *t);
                if (t == NULL) {
                    ok = 0;
                    break;
                }
                qs = t, capq = cap;
            }
            qs[nq++] = q;
        }
    }
    if (ok) {
        if (reqs.n > 1) qsort(reqs.t, reqs.n, sizeof *reqs.t, tally_cmp);
        header(f, rep, verdict);
        fputs("<h2 id=\"counts-by\">Counts</h2>\n<div class=\"counts\">\n", f);
        count_table(f, "By family", "family", &fam);
        count_table(f, "By operation", "operation", &ops);
        count_table(f, "By level", "level", &lev);
        count_table(f, "By requirement", "requirement ID", &reqs);
        fputs("</div>\n<p class=\"note\">A requirement ID counts the cases whose failure detail or bounded "
              "quantity cites it.</p>\n",
              f);
        failures(f, rep);
        ok = skips(f, rep);
    }
    if (ok) {
        fputs("<h2 id=\"margins\">Margins</h2>\n", f);
        if (nq == 0)
            fputs("<p class=\"note\">No case reports a bounded quantity.</p>\n", f);
        else
            fputs("<p class=\"note\">For each bounded quantity, each case's largest observed error against "
                  "the proven bound it must stay within (outward-rounded by the exact path). Points above "
                  "the diagonal exceed their bound. Hover a point for its case.</p>\n",
                  f);
        for (size_t k = 0; k < nq && ok; k++) ok = margin_plot(f, rep, qs[k], k + 1);
    }
    if (ok) fputs("</body>\n</html>\n", f);
    tallies_free(&fam), tallies_free(&ops), tallies_free(&lev), tallies_free(&reqs);
    free(qs);
    return ok;
}

kvq_status kvq_report_html(const char *path, const kvq_verify_report *rep, char *err, size_t errlen)
{
    kvq_outfile o;
    kvq_status st = kvq_outfile_open(&o, path, err, errlen);
    if (st != KVQ_OK) return st;
    if (!write_page(o.f, rep)) {
        if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: out of memory", path);
        kvq_outfile_abort(&o);
        return KVQ_E_NOMEM;
    }
    return kvq_outfile_commit(&o, err, errlen);
}
