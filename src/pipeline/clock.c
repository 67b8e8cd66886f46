/*
 * pipeline/clock.c - the clock NOW() reads (sql/plan_temporal.c). A
 * program whose views use NOW() has a clock table `now` (one TIMESTAMP
 * column, LATENESS 0); its watermark, the largest time pushed, is the
 * clock of every step. The controller pushes the wall-clock time (UTC,
 * microseconds, never decreasing) into it as HTTP input every resolution
 * (SLUICE_CLOCK=<milliseconds>, default 1000), so a step runs at every
 * tick even without other input, and the time enters the ingress log
 * and the journal like any HTTP input: a replay after a restart sees the
 * same clock as the run it replays, and the clock (the watermark) is
 * checkpointed by the table's source node. SLUICE_CLOCK=manual pushes
 * nothing: the clock moves only when something posts to /ingress/now
 * (tests drive it so).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline_int.h"

void pipe_clock_init(Pipeline *p)
{
    p->clock_rel = -1;
    p->clock_res = 0;
    for (int i = 0; i < p->c->nrels; i++)
        if (p->c->rels[i].clock)
            p->clock_rel = i;
    if (p->clock_rel < 0)
        return;
    const char *e = getenv("SLUICE_CLOCK");
    if (e && !strcmp(e, "manual"))
        return;
    double ms = e && atof(e) > 0 ? atof(e) : 1000;
    p->clock_res = ms / 1000.0;
    p->clock_next = 0;
}

static int64_t wall_usecs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void pipe_clock_tick(Pipeline *p)
{
    if (p->clock_rel < 0 || p->clock_res <= 0)
        return;
    double t = pipe_now();
    if (t < p->clock_next)
        return;
    /* never behind the clock (restored by a restart, or moved ahead by a
       push to /ingress/now): an earlier time would be a late row */
    int64_t late, wm = rt_watermark(p->be->rt, p->clock_rel, &late);
    int64_t now = wall_usecs();
    if (now < p->clock_last)
        now = p->clock_last;
    if (now < wm)
        now = wm;
    InBatch *b = inbatch_new(p->c, p->clock_rel);
    Chunk *c = inbatch_room(b);
    c->col[0].i[c->n] = now;
    c->w[c->n] = 1;
    c->n++;
    int64_t tok;
    if (pipeline_push_take(p, b, 0, &tok) == 0) { /* full: the next loop tries again */
        p->clock_last = now;
        p->clock_next = t + p->clock_res;
    }
}
