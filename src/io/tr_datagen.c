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

int64_t tr_datagen_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists)
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
