/*
 * io/tr_datagen.c - the datagen transport's step planning: which row
 * ranges of which plan go into the next step, honouring `limit` and
 * `rate`, split evenly across workers, who generate the rows themselves
 * (datagen_fill). The position (plan, next row) is all the state there is.
 */
#include <math.h>

#include "io_int.h"

void datagen_piece_fill(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                        Arena *a)
{
    datagen_fill(src, plan, start, count, out, a);
}

static int64_t datagen_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists,
                            Err *err)
{
    int64_t total = 0;
    while (total < max && !ic->done) {
        int p = ic->plan;
        if (p >= datagen_nplans(ic->gen)) {
            ic->done = true;
            break;
        }
        int64_t limit = datagen_plan_limit(ic->gen, p);
        if (limit >= 0 && ic->next >= limit) {
            ic->plan++;
            ic->next = 0;
            ic->plan_start = -1;
            continue;
        }
        double now = io_now();
        if (ic->plan_start < 0)
            ic->plan_start = now;
        int64_t n = max - total;
        if (limit >= 0 && n > limit - ic->next)
            n = limit - ic->next;
        double rate = datagen_plan_rate(ic->gen, p);
        if (rate > 0 && !ic->replay) {
            int64_t allowed = (int64_t)floor(rate * (now - ic->plan_start)) + 1 - ic->next;
            if (allowed < n)
                n = allowed;
            if (n <= 0)
                break;
        }
        int64_t per = (n + nworkers - 1) / nworkers;
        for (int w = 0; w < nworkers; w++) {
            int64_t s = (int64_t)w * per, e = s + per < n ? s + per : n;
            if (s >= e)
                break;
            Piece *pc = arena_zalloc(a, sizeof(*pc));
            pc->fill = datagen_piece_fill;
            pc->src = ic->gen;
            pc->plan = p;
            pc->start = ic->next + s;
            pc->count = e - s;
            piece_append(&lists[w], pc);
        }
        ic->next += n;
        ic->rows += n;
        total += n;
        if (rate > 0)
            break; /* one rate window per step */
    }
    return total;
}

static double datagen_wait(const InputConn *ic)
{
    if (ic->done || ic->plan_start < 0)
        return 0;
    double rate = datagen_plan_rate(ic->gen, ic->plan);
    if (rate <= 0)
        return 0;
    double due = ic->plan_start + (double)(ic->next + 1) / rate;
    double now = io_now();
    return due > now ? due - now : 0;
}

/* The end of a plan with a limit is the start of the next: a step that
   ends exactly there stops at (plan, limit), one that asked for more went
   on to (plan + 1, 0). Both are written the second way. */
static void datagen_canon(const InputConn *ic, InPos *pos)
{
    int np = datagen_nplans(ic->gen);
    while (pos->v[0] >= 0 && pos->v[0] < np) {
        int64_t limit = datagen_plan_limit(ic->gen, (int)pos->v[0]);
        if (limit < 0 || pos->v[1] < limit)
            break;
        pos->v[0]++;
        pos->v[1] = 0;
    }
}

static void datagen_pos(const InputConn *ic, InPos *out)
{
    out->v[0] = ic->plan;
    out->v[1] = ic->next;
    datagen_canon(ic, out);
}

static int datagen_seek(InputConn *ic, const InPos *pos, Err *err)
{
    if (pos->v[0] < 0 || pos->v[0] > datagen_nplans(ic->gen) || pos->v[1] < 0)
        return err_set(err, SL_EIO, "%s: saved position (plan %lld, row %lld) does not fit "
                       "its %d plan(s)", ic->name, (long long)pos->v[0],
                       (long long)pos->v[1], datagen_nplans(ic->gen));
    ic->plan = (int)pos->v[0];
    ic->next = pos->v[1];
    ic->plan_start = -1;
    return 0;
}

static void datagen_close(InputConn *ic)
{
    if (ic->gen)
        datagen_free(ic->gen);
    ic->gen = NULL;
}

const InOps tr_datagen_in_ops = {
    .next = datagen_next,
    .wait = datagen_wait,
    .pos = datagen_pos,
    .canon = datagen_canon,
    .seek = datagen_seek,
    .close = datagen_close,
};
