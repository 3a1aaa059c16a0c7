/*
 * progress.c -- cases done of long work, on standard error [VER-CLI-07]:
 * "kvq verify: 1200/4096 cases, 310.2/s, about 0:09 left", redrawn at most
 * four times a second on a terminal; one line a tenth of the way when asked
 * for outside a terminal (CI logs), nothing otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void kvq_progress_init(kvq_progress *p, const char *what, int mode)
{
    p->what = what;
    p->tty = isatty(2);
    p->on = mode > 0 || (mode == 0 && p->tty && getenv("CI") == NULL);
    p->t0 = p->last = now();
    p->shown_tenth = 0;
    p->drawn = 0;
}

void kvq_progress_tick(kvq_progress *p, uint64_t done, uint64_t total)
{
    double t, rate;
    unsigned tenth;
    if (p == NULL || !p->on || total == 0) return;
    t = now();
    tenth = (unsigned)(done * 10u / total);
    if (p->tty ? (t - p->last < 0.25 && done != total) : (tenth == p->shown_tenth && done != total)) return;
    p->last = t, p->shown_tenth = tenth;
    rate = t > p->t0 ? (double)done / (t - p->t0) : 0.0;
    if (rate > 0.0 && done < total) {
        unsigned long left = (unsigned long)((double)(total - done) / rate + 0.5);
        fprintf(stderr, "%s%s: %llu/%llu cases, %.1f/s, about %lu:%02lu left%s", p->tty ? "\r" : "", p->what,
                (unsigned long long)done, (unsigned long long)total, rate, left / 60u, left % 60u,
                p->tty ? "\033[K" : "\n");
    } else {
        fprintf(stderr, "%s%s: %llu/%llu cases, %.1f/s%s", p->tty ? "\r" : "", p->what, (unsigned long long)done,
                (unsigned long long)total, rate, p->tty ? "\033[K" : "\n");
    }
    p->drawn = 1;
    fflush(stderr);
}

void kvq_progress_end(kvq_progress *p)
{
    if (p != NULL && p->on && p->tty && p->drawn) fputc('\n', stderr);
}
