/*
 * base/budget.c - per-thread bounds of one computation (budget.h): the
 * thread's current Budget, the check the engine's loops call, and the
 * message for the bound that stopped it.
 */
#include "budget.h"

#include <time.h>

__thread Budget *budget__cur;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void budget_begin(Budget *b)
{
    int64_t now = now_ns();
    b->used = b->peak = 0;
    b->stop = BUDGET_RUNNING;
    b->deadline_ns = b->timeout > 0 ? now + (int64_t)(b->timeout * 1e9) : 0;
    b->next_poll_ns = now;
    budget__cur = b;
}

void budget_end(void) { budget__cur = NULL; }

bool budget__check(Budget *b)
{
    if (b->stop)
        return true;
    if (b->limit > 0 && b->used > b->limit) {
        b->stop = BUDGET_MEMORY;
        return true;
    }
    if (!b->deadline_ns && !b->cancelled)
        return false;
    int64_t now = now_ns();
    if (b->deadline_ns && now >= b->deadline_ns)
        b->stop = BUDGET_TIMEOUT;
    else if (b->cancelled && now >= b->next_poll_ns) {
        b->next_poll_ns = now + 50 * 1000000;
        if (b->cancelled(b->arg))
            b->stop = BUDGET_CANCELLED;
    }
    return b->stop != BUDGET_RUNNING;
}

int budget_error(Err *err)
{
    Budget *b = budget__cur;
    switch (b ? b->stop : BUDGET_RUNNING) {
    case BUDGET_MEMORY:
        return err_set(err, SL_ERUNTIME,
                       "query stopped: it needed more than its memory budget of %lld bytes",
                       (long long)b->limit);
    case BUDGET_TIMEOUT:
        return err_set(err, SL_ERUNTIME,
                       "query stopped: it ran longer than its time limit of %g s",
                       b->timeout);
    case BUDGET_CANCELLED:
        return err_set(err, SL_ERUNTIME, "query cancelled: the client closed the connection");
    default:
        return err_set(err, SL_ERUNTIME, "query stopped");
    }
}
